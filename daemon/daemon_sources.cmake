# loopr_daemon: looprd's pieces (one concern per file); looprd: its main.
add_library(loopr_daemon STATIC
  approval_gate.cpp
  client_session.cpp
  control_server.cpp
  daemon.cpp
  event_bus.cpp
  hook_lane.cpp
  hosted_tools.cpp
  logging.cpp
  loop_methods.cpp
  loop_tools.cpp
  memory_methods.cpp
  methods.cpp
  metrics.cpp
  path_locks.cpp
  provider_registry.cpp
  read_tracker.cpp
  policy_methods.cpp
  repo_methods.cpp
  runner_link.cpp
  socket_activation.cpp
  systemd_notify.cpp
  tool_router.cpp
  web_search_args.cpp)
target_include_directories(loopr_daemon PUBLIC ${PROJECT_SOURCE_DIR})
# asio is standalone and header-only (libasio-dev); ASIO_NO_DEPRECATED keeps
# us on the current API.
target_compile_definitions(loopr_daemon PUBLIC ASIO_STANDALONE ASIO_NO_DEPRECATED)
# The version initialize reports and the log names: CMake's project version.
target_compile_definitions(loopr_daemon PRIVATE LOOPR_DAEMON_VERSION="${PROJECT_VERSION}")
# g++ 12 misreports asio's awaitable frame allocator (it pairs a custom
# operator new with its matching delete) as mismatched (GCC bug 109224).
target_compile_options(loopr_daemon PUBLIC $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)
target_link_libraries(loopr_daemon PUBLIC loopr_common loopr_proto loopr_config loopr_json_schema
                                          loopr_store loopr_memory loopr_repos loopr_oracle loopr_llm loopr_loops loopr_notify loopr_hooks loopr_cluster_link loopr_egress_proxy spdlog::spdlog
                                          Threads::Threads)
loopr_target_options(loopr_daemon)

add_executable(looprd main.cpp)
target_link_libraries(looprd PRIVATE loopr_daemon CLI11::CLI11)
target_compile_definitions(looprd PRIVATE LOOPR_VERSION="${PROJECT_VERSION}")
loopr_target_options(looprd)
