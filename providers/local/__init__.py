"""The `local` provider: speech engines that run on the gateway's own machine, offline."""
