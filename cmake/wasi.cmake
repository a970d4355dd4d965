# cmake/wasi.cmake - toolchain file: Debian's clang-14 + lld + wasi-libc
# targeting wasm32-wasi (Debian's equivalent of wasi-sdk).
#
#   cmake -S . -B build/wasi -DCMAKE_TOOLCHAIN_FILE=cmake/wasi.cmake
#
# The sysroot (/usr/include/wasm32-wasi, /usr/lib/wasm32-wasi from the
# wasi-libc package) and the builtins (libclang-rt-14-dev-wasm32) are found by
# `clang-14 --target=wasm32-wasi` itself. Override the compiler with
# -DTP_WASI_CLANG=/path/to/clang and the sysroot with -DTP_WASI_SYSROOT=dir
# (e.g. a wasi-sdk install).
set(CMAKE_SYSTEM_NAME WASI)
set(CMAKE_SYSTEM_VERSION 1)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}")

set(TP_WASI_TRIPLE wasm32-wasi)
if(NOT TP_WASI_CLANG)
  find_program(TP_WASI_CLANG NAMES clang-14 clang-15 clang-16 clang REQUIRED)
endif()
# Strip the version suffix of the compiler to find the matching binutils.
get_filename_component(_tp_cc_name "${TP_WASI_CLANG}" NAME)
string(REGEX MATCH "-[0-9]+$" _tp_llvm_suffix "${_tp_cc_name}")
find_program(TP_WASI_AR NAMES llvm-ar${_tp_llvm_suffix} llvm-ar REQUIRED)
find_program(TP_WASI_RANLIB NAMES llvm-ranlib${_tp_llvm_suffix} llvm-ranlib REQUIRED)

set(CMAKE_C_COMPILER "${TP_WASI_CLANG}")
set(CMAKE_C_COMPILER_TARGET ${TP_WASI_TRIPLE})
set(CMAKE_AR "${TP_WASI_AR}" CACHE FILEPATH "archiver" FORCE)
set(CMAKE_RANLIB "${TP_WASI_RANLIB}" CACHE FILEPATH "ranlib" FORCE)
if(TP_WASI_SYSROOT)
  set(CMAKE_SYSROOT "${TP_WASI_SYSROOT}")
endif()

# Nothing built for wasm32 can run on the build machine: no try_run, and
# compiler checks build a static library instead of linking an executable.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_CROSSCOMPILING_EMULATOR "")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
