"""Files with background processing (spec function 6)."""
