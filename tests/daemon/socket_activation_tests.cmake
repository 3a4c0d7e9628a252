# Socket activation and --version (issue 14): the unit tests of take_activation_socket in
# daemon_unit_test, and the end-to-end tests in daemon_integration_test (so
# scripts/run-unprivileged-tests.sh runs them as an ordinary user too).
if(TARGET daemon_unit_test AND TARGET daemon_integration_test)
  target_sources(daemon_unit_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/socket_activation_unit_test.cpp)
  target_sources(daemon_integration_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/socket_activation_test.cpp
                                                 ${CMAKE_CURRENT_LIST_DIR}/version_flag_test.cpp)
  add_dependencies(daemon_integration_test looprctl)  # VersionFlag runs it
endif()
