# Loops against local servers that speak the Anthropic and OpenAI wire
# formats, through the real looprd; and the key-leak and planted-hook attacks
# on loops (SECURITY.md classes 26, 27).
if(TARGET loopr_daemon_harness)
  loopr_add_test(loop_provider_test loop_provider_test.cpp loop_context_test.cpp)
  target_link_libraries(loop_provider_test PRIVATE loopr_daemon_harness)
  add_dependencies(loop_provider_test looprd loopr-runner loopr-tool)
endif()
