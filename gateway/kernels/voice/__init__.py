"""The voice kernel: what the pipelines family and the realtime family both speak in.

The overlapped pipeline (`flow`), turn detection (`vad`), and the session interface
(`session`): the configuration of a voice session and the cascade a session runs on.
The pipelines family implements the cascade over its templates; the realtime family
speaks the protocols over it; the composition root hands the one to the other.
"""
