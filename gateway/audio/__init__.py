"""Audio: speech-to-text, text-to-speech, the voice catalog and workspace voice mappings."""
