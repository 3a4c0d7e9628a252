# looprctl tests. FakeDaemon scripts the control socket in process; the
# looprctl-fake-daemon binary stands in for looprd in `daemon start` tests.
add_library(loopr_fake_daemon STATIC fake_daemon.cpp)
target_link_libraries(loopr_fake_daemon PUBLIC loopr_proto Threads::Threads)
loopr_target_options(loopr_fake_daemon)

add_executable(looprctl-fake-daemon fake_looprd_main.cpp)
target_link_libraries(looprctl-fake-daemon PRIVATE loopr_fake_daemon)
loopr_target_options(looprctl-fake-daemon)

loopr_add_test(client_test
  client_output_test.cpp
  control_client_test.cpp
  daemon_command_test.cpp
  loop_commands_test.cpp
  loop_tree_test.cpp
  looprctl_cli_test.cpp
  looprctl_run.cpp
  memory_commands_test.cpp
  plan_commands_test.cpp
  policy_check_test.cpp)
target_link_libraries(client_test PRIVATE loopr_client loopr_fake_daemon loopr_test_support
                                          rapidcheck rapidcheck_gtest)
add_dependencies(client_test looprctl looprctl-fake-daemon)

# looprctl memory and the memory.* methods against the real looprd, with
# notes saved through tool.call (issue 13).
if(TARGET loopr_daemon_harness)
  loopr_add_test(memory_looprd_test memory_looprd_test.cpp looprctl_run.cpp
                 ../daemon/loop_fixture.cpp)
  target_link_libraries(memory_looprd_test PRIVATE loopr_daemon_harness)
  add_dependencies(memory_looprd_test looprd looprctl loopr-runner loopr-tool)
endif()

# Repository settings (issue 25): looprctl repo and the repo.* methods, the
# test tool and a loop's validation against the real looprd.
if(TARGET loopr_daemon_harness)
  loopr_add_test(repo_settings_looprd_test repo_settings_looprd_test.cpp looprctl_run.cpp
                 ../daemon/loop_fixture.cpp)
  target_link_libraries(repo_settings_looprd_test PRIVATE loopr_daemon_harness)
  add_dependencies(repo_settings_looprd_test looprd looprctl loopr-runner loopr-tool)
endif()

# approve --always (issue 27): the saved rule against the real looprd and looprctl.
if(TARGET loopr_daemon_harness)
  loopr_add_test(approve_always_looprd_test approve_always_looprd_test.cpp looprctl_run.cpp)
  target_link_libraries(approve_always_looprd_test PRIVATE loopr_daemon_harness GTest::gmock)
  add_dependencies(approve_always_looprd_test looprd looprctl loopr-runner loopr-tool)
endif()

# Headless runs (issue 27): looprctl --json loop run's JSON lines and its
# exit status per outcome, against the real looprd.
if(TARGET loopr_daemon_harness)
  loopr_add_test(headless_looprd_test headless_looprd_test.cpp looprctl_run.cpp
                 ../daemon/loop_fixture.cpp)
  target_link_libraries(headless_looprd_test PRIVATE loopr_daemon_harness)
  add_dependencies(headless_looprd_test looprd looprctl loopr-runner loopr-tool)
endif()
