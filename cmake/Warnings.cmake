# Warnings shared by every target of ours (not by third-party code).
add_library(qr_warnings INTERFACE)
target_compile_options(qr_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wconversion -Wno-sign-conversion>)
