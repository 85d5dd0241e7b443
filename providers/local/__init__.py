"""The `local` provider: engines that run on the gateway's own machine with no network
(speech synthesis and recognition, OCR)."""
