// Catch2's main, with the library's log output kept out of the test report.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::off);
  return Catch::Session().run(argc, argv);
}
