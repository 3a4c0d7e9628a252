# regex_engine_bench: PCRE2-JIT vs RE2 scanning an in-memory corpus built from
# /usr/include, the measurement behind grep's engine (bench/README.md). RE2
# (libre2-dev) is optional: without it only the PCRE2 rows are built.
pkg_check_modules(RE2 IMPORTED_TARGET re2)
add_executable(regex_engine_bench ${CMAKE_CURRENT_SOURCE_DIR}/regex_engine_bench.cpp)
target_link_libraries(regex_engine_bench PRIVATE PkgConfig::PCRE2 benchmark::benchmark)
if(RE2_FOUND)
  target_link_libraries(regex_engine_bench PRIVATE PkgConfig::RE2)
  target_compile_definitions(regex_engine_bench PRIVATE LOOPR_HAVE_RE2=1)
endif()
loopr_target_options(regex_engine_bench)
