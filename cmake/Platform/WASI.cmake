# Platform/WASI.cmake - CMake 3.25 knows no "WASI" system; this file (found
# through CMAKE_MODULE_PATH, set by cmake/wasi.cmake) makes it a plain
# static-only Unix-like platform, as wasi-sdk's own platform file does.
set(WASI 1)
set(UNIX 1)
set(CMAKE_EXECUTABLE_SUFFIX ".wasm")
set(CMAKE_STATIC_LIBRARY_PREFIX "lib")
set(CMAKE_STATIC_LIBRARY_SUFFIX ".a")
set(CMAKE_FIND_LIBRARY_PREFIXES "lib")
set(CMAKE_FIND_LIBRARY_SUFFIXES ".a")
set_property(GLOBAL PROPERTY TARGET_SUPPORTS_SHARED_LIBS FALSE)
