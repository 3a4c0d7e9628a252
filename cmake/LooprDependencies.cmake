# Every dependency comes from a Debian 12 package (scripts/install-deps.sh).
# Nothing is downloaded at build time.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
# Desktop notifications on the D-Bus session bus (notify/session_bus.cpp).
pkg_check_modules(DBUS REQUIRED IMPORTED_TARGET dbus-1)

# toml11 3.7 is header-only; Debian ships its CMake config.
find_package(toml11 3.7 REQUIRED)

if(LOOPR_BUILD_TESTS)
  find_package(GTest REQUIRED)
  # Property tests: rapidcheck with its GoogleTest integration (rapidcheck_gtest).
  find_package(rapidcheck REQUIRED)
  include(GoogleTest)
endif()
if(LOOPR_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
