#include "client/tool_result_view.hpp"

#include <ostream>
#include <string>

#include "client/text_format.hpp"
#include "proto/base64.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

bool is_string_member(const json& object, const char* key) {
  const json* value = member(object, key);
  return value != nullptr && value->is_string();
}

bool is_true(const json& object, const char* key) {
  const json* value = member(object, key);
  return value != nullptr && value->is_boolean() && value->get<bool>();
}

bool is_command_output(const json& output) {
  return (is_string_member(output, "stdout") || is_string_member(output, "stderr")) &&
         member(output, "exit_code") != nullptr;
}

bool is_file_content(const json& output) {
  return is_string_member(output, "content");
}

// The stream's exact bytes: "<name>_base64" when the tool added it (output
// that is not UTF-8), else the text.
std::string stream_bytes(const json& output, const char* name) {
  const json* exact = member(output, (std::string(name) + "_base64").c_str());
  if (exact != nullptr && exact->is_string()) {
    auto decoded = proto::base64_decode(exact->get_ref<const std::string&>());
    if (decoded) return std::move(decoded).value();
  }
  const json* text = member(output, name);
  return text != nullptr && text->is_string() ? text->get<std::string>() : std::string();
}

void print_command_output(const json& output, std::ostream& out, std::ostream& err) {
  const std::string stdout_bytes = stream_bytes(output, "stdout");
  const std::string stderr_bytes = stream_bytes(output, "stderr");
  out << stdout_bytes;
  out.flush();
  err << stderr_bytes;
  if (!stderr_bytes.empty() && stderr_bytes.back() != '\n') err << '\n';

  std::string status;
  const json* signal = member(output, "signal");
  if (signal != nullptr && signal->is_number_integer()) {
    status = "killed by signal " + cell(output, "signal");
  } else {
    status = "exit code: " + cell(output, "exit_code");
  }
  if (is_true(output, "timed_out")) status += " (timed out)";
  if (is_true(output, "truncated")) status += " (output truncated)";
  err << status << '\n';
  for (const char* note : {"hint", "sandbox_note"}) {
    if (is_string_member(output, note)) err << "note: " << cell(output, note) << '\n';
  }
}

void print_file_content(const json& output, std::ostream& out, std::ostream& err) {
  const std::string& content = output.at("content").get_ref<const std::string&>();
  out << content;
  if (!content.empty() && content.back() != '\n') out << '\n';
  if (is_true(output, "more")) {
    err << "(more lines follow: call again with \"offset\": " << cell(output, "next_offset")
        << ")\n";
  }
  if (is_string_member(output, "note")) err << "note: " << cell(output, "note") << '\n';
}

void print_output(const json& output, std::ostream& out, std::ostream& err) {
  if (is_command_output(output)) {
    print_command_output(output, out, err);
  } else if (is_file_content(output)) {
    print_file_content(output, out, err);
  } else {
    out << pretty_json(output) << '\n';
  }
}

}  // namespace

Result<bool> tool_call_succeeded(const json& result) {
  const json* ok = member(result, "ok");
  if (ok == nullptr || !ok->is_boolean()) {
    return make_error(errc::protocol, "the tool.call result has no boolean 'ok': " +
                                          printable(compact_json(result)).substr(0, 200));
  }
  return ok->get<bool>();
}

void print_tool_error(const json& result, std::ostream& err) {
  static const json kNone;
  const json* found = member(result, "error");
  const json& error = found != nullptr ? *found : kNone;
  const std::string code =
      is_string_member(error, "code") ? cell(error, "code") : cell(result, "status");
  const std::string message = is_string_member(error, "message")
                                  ? printable_lines(error["message"].get<std::string>())
                                  : "the call did not succeed";
  err << "error: " << code << ": " << message << '\n';
  if (is_string_member(error, "hint")) err << "hint: " << cell(error, "hint") << '\n';
}

ExitStatus print_tool_result(const json& result, std::ostream& out, std::ostream& err) {
  // A worker on another machine ran it ([cluster]): said on stderr, first.
  if (is_string_member(result, "worker") && cell(result, "worker") != "local") {
    err << "(ran on worker " << cell(result, "worker") << ")\n";
  }
  const bool ok = is_true(result, "ok");
  const json* output = member(result, "output");
  if (ok) {
    print_output(output != nullptr ? *output : json(nullptr), out, err);
    return ExitStatus::ok;
  }
  if (output != nullptr && !output->is_null() && !(output->is_object() && output->empty())) {
    print_output(*output, out, err);
  }
  print_tool_error(result, err);
  return ExitStatus::call_failed;
}

}  // namespace loopr::client
