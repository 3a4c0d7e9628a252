#include "tests/mcp_unit/fake_daemon_link.hpp"

#include <utility>

namespace loopr::mcp::test {

using json = nlohmann::json;

void FakeCall::emit(const std::string& name, json data) {
  std::unique_lock lock(mutex_);
  if (data.contains("call_id")) {
    call_id_ = data["call_id"];
  }
  events_.push_back(DaemonEvent{name, std::move(data)});
  const std::size_t mine = ++emitted_;
  changed_.notify_all();
  changed_.wait_for(lock, kWait, [&] { return delivered_ >= mine || returned_; });
}

void FakeCall::finish(json outcome) {
  std::lock_guard lock(mutex_);
  outcome_ = std::move(outcome);
  changed_.notify_all();
}

void FakeCall::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  changed_.notify_all();
}

bool FakeCall::wait_aborted() {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, kWait, [&] { return aborted_; });
}

bool FakeCall::aborted() const {
  std::lock_guard lock(mutex_);
  return aborted_;
}

std::string FakeCall::call_id() const {
  std::lock_guard lock(mutex_);
  return call_id_;
}

Result<json> FakeCall::run(const DaemonLink::EventHandler& on_event, CallControl& control) {
  control.on_abort([this] { abort(); });
  std::unique_lock lock(mutex_);
  Result<json> result = json();
  while (true) {
    changed_.wait(lock, [&] { return !events_.empty() || outcome_ || aborted_; });
    if (!events_.empty()) {
      DaemonEvent event = std::move(events_.front());
      events_.pop_front();
      lock.unlock();
      on_event(event);
      lock.lock();
      ++delivered_;
      changed_.notify_all();
      continue;
    }
    if (aborted_) {
      result = make_error("daemon_unreachable", "the call's connection was closed");
    } else {
      result = *outcome_;
    }
    break;
  }
  returned_ = true;
  changed_.notify_all();
  lock.unlock();
  control.clear();
  return result;
}

FakeDaemonLink::FakeDaemonLink() : catalog_(sample_catalog()) {}

Result<json> FakeDaemonLink::request(const std::string& method, const json& params) {
  std::shared_ptr<FakeCall> cancelled;
  json catalog;
  {
    std::lock_guard lock(mutex_);
    requests_.push_back({method, params});
    changed_.notify_all();
    catalog = catalog_;
    if (method == "tool.cancel") {
      for (const auto& call : calls_) {
        if (!call->call_id().empty() && call->call_id() == params.value("call_id", "")) {
          cancelled = call;
        }
      }
    }
  }
  if (method == "tool.list") return json{{"tools", catalog}};
  if (method == "tool.cancel") {
    if (cancelled) {
      cancelled->finish({{"ok", false},
                         {"call_id", cancelled->call_id()},
                         {"tool", cancelled->params().value("tool", "")},
                         {"status", "cancelled"},
                         {"error", {{"code", "cancelled"}, {"message", "cancelled"}}}});
    }
    return json{{"cancelled", cancelled != nullptr}};
  }
  if (method == "approval.approve") return json{{"id", params.value("id", "")}, {"approved", true}};
  if (method == "approval.deny") return json{{"id", params.value("id", "")}, {"approved", false}};
  return json::object();
}

Result<json> FakeDaemonLink::call_tool(const json& params, const EventHandler& on_event,
                                       CallControl& control) {
  auto call = std::make_shared<FakeCall>(params);
  std::optional<json> immediate;
  {
    std::lock_guard lock(mutex_);
    requests_.push_back({"tool.call", params});
    calls_.push_back(call);
    immediate = immediate_outcome_;
    changed_.notify_all();
  }
  if (immediate) call->finish(*immediate);
  return call->run(on_event, control);
}

void FakeDaemonLink::set_catalog(json tools) {
  std::lock_guard lock(mutex_);
  catalog_ = std::move(tools);
}

void FakeDaemonLink::finish_all_calls() {
  std::vector<std::shared_ptr<FakeCall>> calls;
  {
    std::lock_guard lock(mutex_);
    calls = calls_;
  }
  for (const auto& call : calls)
    call->finish({{"ok", false}, {"status", "cancelled"}});
}

void FakeDaemonLink::finish_calls_at_once(json outcome) {
  std::lock_guard lock(mutex_);
  immediate_outcome_ = std::move(outcome);
}

std::shared_ptr<FakeCall> FakeDaemonLink::wait_for_call(std::size_t n) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, kWait, [&] { return calls_.size() > n; })) return nullptr;
  return calls_[n];
}

std::size_t FakeDaemonLink::call_count() const {
  std::lock_guard lock(mutex_);
  return calls_.size();
}

std::vector<RecordedRequest> FakeDaemonLink::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::vector<json> FakeDaemonLink::requests_of(const std::string& method) const {
  std::lock_guard lock(mutex_);
  std::vector<json> found;
  for (const RecordedRequest& request : requests_) {
    if (request.method == method) found.push_back(request.params);
  }
  return found;
}

bool FakeDaemonLink::wait_for_request(const std::string& method) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, kWait, [&] {
    for (const RecordedRequest& request : requests_) {
      if (request.method == method) return true;
    }
    return false;
  });
}

void RecordingOutbox::send(const json& message) {
  std::function<void(const json&)> hook;
  {
    std::lock_guard lock(mutex_);
    messages_.push_back(message);
    hook = hook_;
    changed_.notify_all();
  }
  if (hook) hook(message);
}

void RecordingOutbox::finish() {
  std::lock_guard lock(mutex_);
  finished_ = true;
  changed_.notify_all();
}

void RecordingOutbox::on_send(std::function<void(const json&)> hook) {
  std::lock_guard lock(mutex_);
  hook_ = std::move(hook);
}

std::vector<json> RecordingOutbox::messages() const {
  std::lock_guard lock(mutex_);
  return messages_;
}

bool RecordingOutbox::finished() const {
  std::lock_guard lock(mutex_);
  return finished_;
}

bool RecordingOutbox::wait_finished() {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, kWait, [&] { return finished_; });
}

std::optional<json> RecordingOutbox::wait_for(const std::function<bool(const json&)>& match) {
  std::unique_lock lock(mutex_);
  std::optional<json> found;
  changed_.wait_for(lock, kWait, [&] {
    for (const json& message : messages_) {
      if (match(message)) {
        found = message;
        return true;
      }
    }
    return false;
  });
  return found;
}

std::optional<json> RecordingOutbox::wait_for_request(const std::string& method) {
  return wait_for([&](const json& message) {
    return message.contains("id") && message.value("method", "") == method;
  });
}

std::optional<json> RecordingOutbox::wait_for_response(const json& id) {
  return wait_for([&](const json& message) {
    return !message.contains("method") && message.contains("id") && message["id"] == id;
  });
}

bool RecordingOutbox::wait_response_ok(const json& id) {
  auto response = wait_for_response(id);
  return response && response->contains("result");
}

std::vector<json> RecordingOutbox::with_method(const std::string& method) const {
  std::lock_guard lock(mutex_);
  std::vector<json> found;
  for (const json& message : messages_) {
    if (message.value("method", "") == method) found.push_back(message);
  }
  return found;
}

json sample_catalog() {
  const json path_schema = {
      {"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}, {"required", {"path"}}};
  return json::array({{{"name", "read_file"},
                       {"description", "Read a file"},
                       {"lane", "no-net"},
                       {"tier", "read-only"},
                       {"enabled", true},
                       {"callable", true},
                       {"input_schema", path_schema},
                       {"output_schema", {{"type", "object"}}}},
                      {{"name", "write_file"},
                       {"description", "Write a file"},
                       {"lane", "no-net"},
                       {"tier", "side-effecting"},
                       {"enabled", true},
                       {"callable", true},
                       {"input_schema", path_schema}},
                      {{"name", "run_command"},
                       {"description", "Run a command"},
                       {"lane", "net"},
                       {"tier", "privileged"},
                       {"enabled", true},
                       {"callable", true},
                       {"input_schema", {{"type", "object"}}}}});
}

json client_request(const json& id, const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json client_notification(const std::string& method, json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

}  // namespace loopr::mcp::test
