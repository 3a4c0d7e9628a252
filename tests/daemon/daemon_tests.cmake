# Unit tests of the daemon's pieces, and integration tests that start the real
# looprd (with its real lane runners) and drive it over its socket.
if(TARGET loopr_daemon)
  loopr_add_test(daemon_unit_test read_tracker_test.cpp event_bus_test.cpp metrics_test.cpp
                 tool_router_test.cpp path_locks_test.cpp approval_display_test.cpp
                 web_search_args_test.cpp)
  target_link_libraries(daemon_unit_test PRIVATE loopr_daemon loopr_test_support)

  add_library(loopr_daemon_harness STATIC daemon_harness.cpp)
  target_link_libraries(loopr_daemon_harness PUBLIC loopr_test_support loopr_client loopr_proto)
  loopr_target_options(loopr_daemon_harness)

  # mcp_protocol_test.cpp: what looprctl mcp relies on (own_calls, session, callable).
  loopr_add_test(daemon_integration_test daemon_integration_test.cpp daemon_hardening_test.cpp
                 mcp_protocol_test.cpp)
  target_link_libraries(daemon_integration_test PRIVATE loopr_daemon_harness loopr_store)
  add_dependencies(daemon_integration_test looprd loopr-runner loopr-tool)

  # Approval rules (issue 27): run_command judged by [[approval.rules]].
  loopr_add_test(approval_rules_test approval_rules_test.cpp)
  target_link_libraries(approval_rules_test PRIVATE loopr_daemon_harness)
  add_dependencies(approval_rules_test looprd loopr-runner loopr-tool)

  # web_search through looprd, the net lane and loopr-fetch, against a fake provider.
  loopr_add_test(web_search_daemon_test web_search_daemon_test.cpp)
  target_link_libraries(web_search_daemon_test PRIVATE loopr_daemon_harness)
  add_dependencies(web_search_daemon_test looprd loopr-runner loopr-tool loopr-fetch)

  # The catalog's output schemas against real outputs of every tool that has
  # one (issue 14: MCP clients check results against them).
  loopr_add_test(output_schema_test output_schema_test.cpp)
  target_link_libraries(output_schema_test PRIVATE loopr_daemon_harness loopr_json_schema
                                                   loopr_config)
  add_dependencies(output_schema_test looprd loopr-runner loopr-tool loopr-fetch)

  # Loops end to end: the real looprd, lane runners, git and the scripted
  # provider, including restarts after SIGKILL.
  loopr_add_test(loop_integration_test loop_integration_test.cpp loop_crash_test.cpp
                 loop_checkout_test.cpp notify_looprd_test.cpp loop_fixture.cpp)
  target_link_libraries(loop_integration_test PRIVATE loopr_daemon_harness loopr_store
                                                      loopr_test_session_bus)
  add_dependencies(loop_integration_test looprd loopr-runner loopr-tool)
  # [[hooks]] (issue 27): refusing, reading events, notes, hanging, crashing,
  # the sandbox, and a loop's events.
  loopr_add_test(hooks_looprd_test hooks_looprd_test.cpp loop_fixture.cpp)
  target_link_libraries(hooks_looprd_test PRIVATE loopr_daemon_harness loopr_store)
  add_dependencies(hooks_looprd_test looprd loopr-runner loopr-tool)
  # Worktrees ready to work in (issue 25): include, setup, no write-through.
  loopr_add_test(loop_prep_test loop_prep_test.cpp loop_fixture.cpp)
  target_link_libraries(loop_prep_test PRIVATE loopr_daemon_harness loopr_store)
  add_dependencies(loop_prep_test looprd loopr-runner loopr-tool)
  # Plans end to end: the whole tree, merges, the gate, crashes.
  # (With a worker through a real nats-server too: cluster_fixture.)
  loopr_add_test(plan_integration_test plan_integration_test.cpp loop_fixture.cpp
                 ${PROJECT_SOURCE_DIR}/tests/cluster/cluster_fixture.cpp)
  target_compile_definitions(plan_integration_test PRIVATE
                             LOOPR_CLUSTER_TEST_DIR="${PROJECT_SOURCE_DIR}/tests/cluster")
  target_link_libraries(plan_integration_test PRIVATE loopr_daemon_harness loopr_store)
  add_dependencies(plan_integration_test looprd loopr-runner loopr-tool)
  # Memory notes through the real looprd and in scripted loops (issue 13;
  # SECURITY class 28: FTS5 syntax in queries, another user's notes).
  loopr_add_test(memory_daemon_test memory_daemon_test.cpp loop_fixture.cpp)
  target_link_libraries(memory_daemon_test PRIVATE loopr_daemon_harness loopr_store)
  add_dependencies(memory_daemon_test looprd loopr-runner loopr-tool)
  # The oracle through the real looprd and in scripted loops, against a local
  # server speaking the Anthropic Messages API (issue 13).
  loopr_add_test(oracle_test oracle_test.cpp loop_fixture.cpp)
  target_link_libraries(oracle_test PRIVATE loopr_daemon_harness loopr_store)
  add_dependencies(oracle_test looprd loopr-runner loopr-tool)
  # SECURITY class 25, disk exhaustion: the worktree root and the state dir
  # on a small tmpfs in the test's own mount namespace (and user namespace,
  # when not root); the database is checked with SQLite itself afterwards.
  find_package(SQLite3 REQUIRED)
  loopr_add_test(disk_full_test disk_full_test.cpp)
  target_link_libraries(disk_full_test PRIVATE loopr_daemon_harness loopr_store SQLite::SQLite3)
  add_dependencies(disk_full_test looprd loopr-runner loopr-tool)
endif()
