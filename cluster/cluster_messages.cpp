#include "cluster/cluster_messages.hpp"

#include <openssl/evp.h>

#include <algorithm>

#include "config/settings.hpp"

namespace loopr::cluster {

using nlohmann::json;

namespace {

Error bad(std::string_view what, std::string_view field) {
  return make_error(errc::protocol,
                    std::string(what) + ": field \"" + std::string(field) + "\" missing or invalid",
                    "a worker and looprd of different loopr versions? update both");
}

Result<json> object_of(std::string_view payload, std::string_view what) {
  json value = json::parse(payload, nullptr, false);
  if (value.is_discarded() || !value.is_object()) {
    return make_error(errc::protocol, std::string(what) + ": not a JSON object");
  }
  return value;
}

std::optional<std::string> text(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::uint64_t> number(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_unsigned()) {
    if (it != o.end() && it->is_number_integer() && it->get<std::int64_t>() >= 0) {
      return static_cast<std::uint64_t>(it->get<std::int64_t>());
    }
    return std::nullopt;
  }
  return it->get<std::uint64_t>();
}

std::optional<std::vector<std::string>> texts(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end()) return std::vector<std::string>();
  if (!it->is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const json& item : *it) {
    if (!item.is_string()) return std::nullopt;
    out.push_back(item.get<std::string>());
  }
  return out;
}

// A folder's name as text JSON can carry: bytes outside printable ASCII
// become '?' (it is only shown to people).
std::string printable_name(const std::string& name) {
  std::string out = name.substr(0, 128);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return out;
}

bool labels_valid(const std::vector<std::string>& labels) {
  return std::all_of(labels.begin(), labels.end(),
                     [](const std::string& l) { return config::cluster_label_valid(l); });
}

}  // namespace

bool valid_id(std::string_view id) {
  return config::cluster_label_valid(id) && id.find('=') == std::string_view::npos;
}

bool valid_worker_id(std::string_view id) {
  // "looprd" would share looprd's inbox prefix (kLooprdInboxPrefix).
  return valid_id(id) && id != "local" && id != "unknown" && id != "looprd";
}

bool valid_commit(std::string_view commit) {
  return commit.size() == 40 && std::all_of(commit.begin(), commit.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string label_key(std::vector<std::string> labels) {
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  if (labels.empty()) return "any";
  std::string key;
  for (const std::string& label : labels) {
    if (!key.empty()) key += '+';
    key += label;
  }
  return key;
}

std::string jobs_subject(std::string_view lane, const std::vector<std::string>& labels) {
  return std::string(kSubjectPrefix) + ".jobs." + std::string(lane) + "." + label_key(labels);
}

std::string consumer_name(std::string_view lane, const std::vector<std::string>& labels) {
  const std::string key = label_key(labels);
  if (key == "any") return "loopr_" + std::string(lane) + "_any";
  // '=' and '+' are not for every tool's view of a name, and mapping them
  // to other characters could make two label sets one name: a digest.
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(key.data(), key.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < 10 && i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return "loopr_" + std::string(lane) + "_" + hex;
}

std::vector<std::vector<std::string>> label_subsets(const std::vector<std::string>& labels) {
  std::vector<std::string> sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (sorted.size() > kMaxWorkerLabels) sorted.resize(kMaxWorkerLabels);
  std::vector<std::vector<std::string>> out;
  for (std::size_t mask = 0; mask < (std::size_t{1} << sorted.size()); ++mask) {
    std::vector<std::string> subset;
    for (std::size_t i = 0; i < sorted.size(); ++i)
      if (mask & (std::size_t{1} << i)) subset.push_back(sorted[i]);
    out.push_back(std::move(subset));
  }
  return out;
}

std::string daemon_subject(std::string_view kind, std::string_view daemon_id) {
  return std::string(kSubjectPrefix) + "." + std::string(kind) + "." + std::string(daemon_id);
}

std::string worker_subject(std::string_view worker_id) {
  return std::string(kSubjectPrefix) + ".workers." + std::string(worker_id);
}

std::string worker_inbox_prefix(std::string_view worker_id) {
  return "_INBOX." + std::string(worker_id);
}

std::string encode(const ClusterJob& m) {
  return json{{"v", kClusterProtocolVersion},
              {"daemon", m.daemon},
              {"lane", m.lane},
              {"labels", m.labels},
              {"repo_key", m.repo_key},
              {"repo_name", printable_name(m.repo_name)},
              {"commit", m.commit},
              {"cwd", m.cwd},
              {"nonce", m.nonce},
              {"job", proto::to_json(proto::RunnerMessage(m.job))}}
      .dump();
}

Result<ClusterJob> parse_cluster_job(std::string_view payload) {
  auto o = object_of(payload, "cluster job");
  if (!o) return std::move(o).error();
  ClusterJob m;
  auto daemon = text(*o, "daemon"), lane = text(*o, "lane"), key = text(*o, "repo_key"),
       name = text(*o, "repo_name"), commit = text(*o, "commit"), cwd = text(*o, "cwd");
  auto labels = texts(*o, "labels");
  auto nonce = text(*o, "nonce");
  if (!daemon || !valid_id(*daemon)) return bad("cluster job", "daemon");
  if (!lane || !valid_id(*lane)) return bad("cluster job", "lane");
  if (!labels || !labels_valid(*labels)) return bad("cluster job", "labels");
  if (!key || !valid_id(*key)) return bad("cluster job", "repo_key");
  if (!commit || !valid_commit(*commit)) return bad("cluster job", "commit");
  if (!cwd || cwd->starts_with("/") || cwd->find("..") != std::string::npos) {
    return bad("cluster job", "cwd");
  }
  if (!nonce || nonce->empty() || nonce->size() > 64) return bad("cluster job", "nonce");
  auto job_json = o->find("job");
  if (job_json == o->end()) return bad("cluster job", "job");
  auto job = proto::parse_runner_message(*job_json);
  if (!job || !std::holds_alternative<proto::Job>(*job)) return bad("cluster job", "job");
  m.daemon = *daemon;
  m.lane = *lane;
  m.labels = *labels;
  m.repo_key = *key;
  m.repo_name = name.value_or("");
  m.commit = *commit;
  m.cwd = *cwd;
  m.nonce = *nonce;
  m.job = std::get<proto::Job>(std::move(*job));
  return m;
}

std::string encode(const Progress& m) {
  json out = {{"kind", m.kind},
              {"job_id", m.job_id},
              {"worker", m.worker},
              {"delivery", m.delivery},
              {"nonce", m.nonce}};
  if (m.chunk) out["chunk"] = proto::to_json(proto::RunnerMessage(*m.chunk));
  return out.dump();
}

Result<Progress> parse_progress(std::string_view payload) {
  auto o = object_of(payload, "progress");
  if (!o) return std::move(o).error();
  Progress m;
  auto kind = text(*o, "kind"), job = text(*o, "job_id"), worker = text(*o, "worker");
  auto delivery = number(*o, "delivery");
  if (!kind || (*kind != "started" && *kind != "output")) return bad("progress", "kind");
  if (!job || job->empty()) return bad("progress", "job_id");
  if (!worker || !valid_worker_id(*worker)) return bad("progress", "worker");
  m.kind = *kind;
  m.nonce = text(*o, "nonce").value_or("");
  m.job_id = *job;
  m.worker = *worker;
  m.delivery = delivery.value_or(1);
  if (m.kind == "output") {
    auto chunk_json = o->find("chunk");
    if (chunk_json == o->end()) return bad("progress", "chunk");
    auto chunk = proto::parse_runner_message(*chunk_json);
    if (!chunk || !std::holds_alternative<proto::OutputChunk>(*chunk)) {
      return bad("progress", "chunk");
    }
    m.chunk = std::get<proto::OutputChunk>(std::move(*chunk));
  }
  return m;
}

std::string encode(const ClusterResult& m) {
  return json{{"worker", m.worker},
              {"delivery", m.delivery},
              {"nonce", m.nonce},
              {"prepare_ms", m.prepare_ms},
              {"result", proto::to_json(proto::RunnerMessage(m.result))}}
      .dump();
}

Result<ClusterResult> parse_cluster_result(std::string_view payload) {
  auto o = object_of(payload, "cluster result");
  if (!o) return std::move(o).error();
  ClusterResult m;
  auto worker = text(*o, "worker");
  if (!worker || !valid_worker_id(*worker)) return bad("cluster result", "worker");
  auto result_json = o->find("result");
  if (result_json == o->end()) return bad("cluster result", "result");
  auto result = proto::parse_runner_message(*result_json);
  if (!result || !std::holds_alternative<proto::JobResult>(*result)) {
    return bad("cluster result", "result");
  }
  m.worker = *worker;
  m.delivery = number(*o, "delivery").value_or(1);
  m.nonce = text(*o, "nonce").value_or("");
  if (auto prepare = o->find("prepare_ms"); prepare != o->end() && prepare->is_number()) {
    m.prepare_ms = prepare->get<double>();
  }
  m.result = std::get<proto::JobResult>(std::move(*result));
  return m;
}

std::string encode(const BundleRequest& m) {
  return json{{"job_id", m.job_id},
              {"repo_key", m.repo_key},
              {"commit", m.commit},
              {"worker", m.worker},
              {"have", m.have}}
      .dump();
}

Result<BundleRequest> parse_bundle_request(std::string_view payload) {
  auto o = object_of(payload, "bundle request");
  if (!o) return std::move(o).error();
  auto job = text(*o, "job_id"), key = text(*o, "repo_key"), commit = text(*o, "commit"),
       worker = text(*o, "worker");
  auto have = texts(*o, "have");
  if (!job || job->empty()) return bad("bundle request", "job_id");
  if (!key || !valid_id(*key)) return bad("bundle request", "repo_key");
  if (!commit || !valid_commit(*commit)) return bad("bundle request", "commit");
  if (!worker || !valid_worker_id(*worker)) return bad("bundle request", "worker");
  if (!have || have->size() > 64 ||
      !std::all_of(have->begin(), have->end(), [](const auto& c) { return valid_commit(c); })) {
    return bad("bundle request", "have");
  }
  return BundleRequest{*job, *key, *commit, *worker, *have};
}

std::string encode(const BundleChunk& m) {
  json header = m.error ? json{{"error", *m.error}} : json{{"seq", m.seq}, {"last", m.last}};
  std::string out = header.dump();
  out += '\n';
  if (!m.error) out += m.bytes;
  return out;
}

Result<BundleChunk> parse_bundle_chunk(std::string_view payload) {
  const auto newline = payload.find('\n');
  if (newline == std::string_view::npos) {
    return make_error(errc::protocol, "bundle chunk: no header line");
  }
  auto o = object_of(payload.substr(0, newline), "bundle chunk");
  if (!o) return std::move(o).error();
  BundleChunk m;
  if (auto error = text(*o, "error")) {
    m.error = *error;
    return m;
  }
  auto seq = number(*o, "seq");
  auto last = o->find("last");
  if (!seq) return bad("bundle chunk", "seq");
  if (last == o->end() || !last->is_boolean()) return bad("bundle chunk", "last");
  m.seq = *seq;
  m.last = last->get<bool>();
  m.bytes = std::string(payload.substr(newline + 1));
  return m;
}

std::string encode(const WorkerPresence& m) {
  json running = json::array();
  for (const RunningJob& job : m.running) {
    running.push_back({{"job_id", job.job_id},
                       {"daemon", job.daemon},
                       {"tool", job.tool},
                       {"started_unix_ms", job.started_unix_ms}});
  }
  return json{{"id", m.id},           {"labels", m.labels},  {"lanes", m.lanes},
              {"slots", m.slots},     {"running", running},  {"sent_unix_ms", m.sent_unix_ms},
              {"version", m.version}, {"leaving", m.leaving}}
      .dump();
}

Result<WorkerPresence> parse_worker_presence(std::string_view payload) {
  auto o = object_of(payload, "worker presence");
  if (!o) return std::move(o).error();
  WorkerPresence m;
  auto id = text(*o, "id");
  auto labels = texts(*o, "labels"), lanes = texts(*o, "lanes");
  auto slots = number(*o, "slots"), sent = number(*o, "sent_unix_ms"),
       version = number(*o, "version");
  if (!id || !valid_worker_id(*id)) return bad("worker presence", "id");
  if (!labels || !labels_valid(*labels)) return bad("worker presence", "labels");
  if (!lanes) return bad("worker presence", "lanes");
  if (!slots || *slots == 0 || *slots > proto::kMaxRunnerSlots) {
    return bad("worker presence", "slots");
  }
  m.id = *id;
  m.labels = *labels;
  m.lanes = *lanes;
  m.slots = static_cast<std::uint32_t>(*slots);
  m.sent_unix_ms = sent.value_or(0);
  m.version = static_cast<std::uint32_t>(version.value_or(0));
  if (auto leaving = o->find("leaving"); leaving != o->end() && leaving->is_boolean()) {
    m.leaving = leaving->get<bool>();
  }
  if (auto running = o->find("running"); running != o->end() && running->is_array()) {
    for (const json& item : *running) {
      if (!item.is_object()) continue;
      m.running.push_back(
          RunningJob{text(item, "job_id").value_or(""), text(item, "daemon").value_or(""),
                     text(item, "tool").value_or(""), number(item, "started_unix_ms").value_or(0)});
    }
  }
  return m;
}

}  // namespace loopr::cluster
