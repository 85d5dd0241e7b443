"""Engines that run on the gateway's own machine with no network (the `local` provider)."""
