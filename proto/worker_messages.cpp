#include "proto/worker_messages.hpp"

#include <nlohmann/json.hpp>

#include "proto/json_bounded.hpp"

namespace loopr::proto {
namespace {

using Json = nlohmann::json;

Result<std::string> frame(const Json& header, std::string_view body) {
  std::string payload = header.dump();
  payload += '\n';
  payload.append(body);
  return encode_raw_frame(payload, kMaxWorkerPayload);
}

Error bad(const std::string& what) {
  return make_error(errc::protocol, "bad warm-worker message: " + what);
}

}  // namespace

Result<std::string> encode_worker_frame(const WorkerMessage& message) {
  if (const auto* ready = std::get_if<WorkerReady>(&message)) {
    return frame(Json{{"type", "ready"}, {"no_process_filter", ready->no_process_filter}}, {});
  }
  if (const auto* call = std::get_if<WorkerCall>(&message)) {
    return frame(
        Json{{"type", "call"}, {"tool", call->tool}, {"max_output_bytes", call->max_output_bytes}},
        call->args_json);
  }
  const auto& reply = std::get<WorkerReply>(message);
  return frame(
      Json{{"type", "reply"}, {"exit_code", reply.exit_code}, {"truncated", reply.truncated}},
      reply.stdout_text);
}

Result<WorkerMessage> parse_worker_payload(std::string_view payload) {
  const std::size_t newline = payload.find('\n');
  if (newline == std::string_view::npos) return bad("no header line");
  auto header = parse_json_bounded(payload.substr(0, newline), 4);
  if (!header) return bad(header.error().message);
  if (!header->is_object()) return bad("the header is not a JSON object");
  const std::string_view body = payload.substr(newline + 1);
  const auto type = header->find("type");
  if (type == header->end() || !type->is_string()) return bad("no \"type\"");
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ready") {
    const auto filter = header->find("no_process_filter");
    return WorkerMessage{
        WorkerReady{filter != header->end() && filter->is_boolean() && filter->get<bool>()}};
  }
  if (name == "call") {
    const auto tool = header->find("tool");
    if (tool == header->end() || !tool->is_string()) return bad("a call without \"tool\"");
    const auto cap = header->find("max_output_bytes");
    const std::uint64_t max_output =
        cap != header->end() && cap->is_number_unsigned() ? cap->get<std::uint64_t>() : 0;
    return WorkerMessage{WorkerCall{tool->get<std::string>(), std::string(body), max_output}};
  }
  if (name == "reply") {
    const auto code = header->find("exit_code");
    if (code == header->end() || !code->is_number_integer()) {
      return bad("a reply without \"exit_code\"");
    }
    const auto truncated = header->find("truncated");
    return WorkerMessage{WorkerReply{
        code->get<int>(), std::string(body),
        truncated != header->end() && truncated->is_boolean() && truncated->get<bool>()}};
  }
  return bad("unknown type \"" + name + "\"");
}

}  // namespace loopr::proto
