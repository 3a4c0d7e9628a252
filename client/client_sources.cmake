# loopr_client: the control-socket client and looprctl's commands, a library
# so tests can drive ControlClient directly; looprctl: its main.
find_package(CLI11 REQUIRED)

add_library(loopr_client STATIC
  approval_commands.cpp
  approval_view.cpp
  cli.cpp
  client_paths.cpp
  command_context.cpp
  control_client.cpp
  daemon_commands.cpp
  daemon_process.cpp
  events_command.cpp
  failure.cpp
  loop_commands.cpp
  loop_follow.cpp
  loop_tree.cpp
  loop_view.cpp
  mcp_command.cpp
  mcp_daemon_link.cpp
  memory_commands.cpp
  memory_view.cpp
  metrics_command.cpp
  metrics_view.cpp
  plan_commands.cpp
  policy_command.cpp
  repo_commands.cpp
  terminal.cpp
  text_format.cpp
  tool_commands.cpp
  tool_result_view.cpp
  tui_command.cpp)
target_include_directories(loopr_client PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(loopr_client PUBLIC loopr_proto loopr_config loopr_mcp CLI11::CLI11)
# `looprctl --version` prints project(loopr VERSION ...) (cli.cpp alone, so a
# version bump recompiles one file).
set_source_files_properties(cli.cpp PROPERTIES COMPILE_DEFINITIONS LOOPR_VERSION="${PROJECT_VERSION}")
loopr_target_options(loopr_client)

add_executable(looprctl main.cpp)
target_link_libraries(looprctl PRIVATE loopr_client)
loopr_target_options(looprctl)
