"""A snippet for a fresh interpreter's program (`python -c`): `arenas()`, glibc's count of
malloc arenas, from its own report (`malloc_info`: one `<heap>` element per arena)."""

ARENAS = """
import ctypes, os, tempfile
def arenas():
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    path = tempfile.mktemp()
    report = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, report)
    libc.fclose(report)
    count = open(path).read().count("<heap nr=")
    os.unlink(path)
    return count
"""
