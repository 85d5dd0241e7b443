"""Personal data in text: the detector (`detector`: names, addresses, numbers, masked for
reports) and the worker process it runs in (`worker`), shared by files' processing and the
scribe pipeline."""
