# QR_SANITIZE: every target of this tree built and linked with those sanitizers; any report is
# fatal (-fno-sanitize-recover). QR_FUZZ: coverage for libFuzzer on every target, so that the
# fuzz targets (test/fuzz) see into the library; needs clang.
if(QR_SANITIZE)
  add_compile_options(-fsanitize=${QR_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${QR_SANITIZE} -fno-sanitize-recover=all)
endif()
if(QR_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "QR_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
