#include "memory/notebook.hpp"

#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "common/utf8.hpp"
#include "memory/fts_query.hpp"

namespace loopr::memory {
namespace {

using nlohmann::json;

// What every search answer leaves for its envelope (keys, message, scores).
constexpr std::size_t kEnvelopeBytes = 2048;
// Longest tag (the schema caps their number at 16).
constexpr std::size_t kMaxTagBytes = 64;
// A snippet is FTS5's window of words around the matches; a "word" can be
// a 16 KiB run of letters, so it is cut too.
constexpr std::size_t kMaxSnippetBytes = 512;
// How much of each note's text a listing carries.
constexpr std::size_t kListedTextBytes = 4096;
// A hit's text is never cut below this, whatever the output cap.
constexpr std::size_t kMinHitTextBytes = 256;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string iso_time(std::int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// "note-" and a random (version 4) UUID.
Result<std::string> new_note_id() {
  unsigned char bytes[16];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    return make_error(errc::internal, "no random bytes for a note id",
                      "try again; the kernel's random source failed");
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "note-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) id += '-';
    id += kHex[bytes[i] >> 4];
    id += kHex[bytes[i] & 15];
  }
  return id;
}

std::string scope_of(const json& args) {
  auto it = args.find("scope");
  return it != args.end() && it->is_string() ? it->get<std::string>() : "repo";
}

std::vector<std::string> tags_of(const json& value) {
  std::vector<std::string> tags;
  if (!value.is_array()) return tags;
  for (const json& tag : value) {
    if (!tag.is_string()) continue;
    std::string text = tag.get<std::string>();
    if (!text.empty() && std::find(tags.begin(), tags.end(), text) == tags.end()) {
      tags.push_back(std::move(text));
    }
  }
  return tags;
}

Error not_found(const std::string& note_id) {
  return make_error(errc::not_found, "there is no note '" + note_id.substr(0, 80) + "' here",
                    "memory_search finds notes and their ids; a note of another repository can "
                    "be changed only from that repository");
}

// `text` cut to `budget` bytes on a character boundary.
// `text` cut on a character boundary so that, written as a JSON string
// (quotes, escapes and all), it takes at most `budget` bytes.
std::string cut(const std::string& text, std::size_t budget, bool& cut_off) {
  auto json_size = [](const std::string& t) {
    return json(t).dump(-1, ' ', false, json::error_handler_t::replace).size();
  };
  std::string out = text.size() > budget ? text.substr(0, utf8_safe_prefix(text, budget)) : text;
  // Escapes can take up to six bytes a byte: shrink in proportion until it fits.
  for (std::size_t size = json_size(out); size > budget && !out.empty(); size = json_size(out)) {
    const std::size_t keep = out.size() * budget / size;
    out.resize(utf8_safe_prefix(out, keep < out.size() ? keep : out.size() - 1));
  }
  cut_off = out.size() < text.size();
  return out;
}

double score_of(double rank) {
  // bm25() is lower (more negative) for better matches; a score is higher.
  // Not rounded: with few notes, a word in most of them scores about 1e-6.
  return -rank;
}

struct Hit {
  double rank = 0;
  json entry;
  std::string text;
};

// Searches notes (and conversations) and fills `results` best first, every
// hit's text cut so the answer fits `max_output_bytes`.
Result<json> run_search(const store::Store& store, const store::NoteScope& scope,
                        const std::string* conversation_repo, const std::string& query,
                        std::size_t top_k, std::size_t max_output_bytes) {
  const std::string match = fts_query(query);
  if (match.empty()) {
    return json{{"results", json::array()},
                {"message", "the query has no words to search for; use words the note holds"}};
  }
  std::vector<Hit> hits;
  auto notes = store.search_notes(scope, match, top_k);
  if (!notes) return std::move(notes).error();
  for (store::NoteHit& hit : *notes) {
    Hit entry;
    entry.rank = hit.rank;
    entry.entry = {{"note_id", hit.note.note_id},
                   {"score", score_of(hit.rank)},
                   {"snippet", hit.snippet},
                   {"source", hit.note.source},
                   {"scope", hit.note.repo.empty() ? "user" : "repo"},
                   {"updated_at", iso_time(hit.note.updated_at_ms)},
                   {"tags", hit.note.tags}};
    entry.text = std::move(hit.note.content);
    hits.push_back(std::move(entry));
  }
  if (conversation_repo != nullptr) {
    auto turns = store.search_conversation(*conversation_repo, match, top_k);
    if (!turns) return std::move(turns).error();
    for (store::ConversationHit& hit : *turns) {
      Hit entry;
      entry.rank = hit.rank;
      entry.entry = {{"note_id", nullptr},
                     {"score", score_of(hit.rank)},
                     {"snippet", hit.snippet},
                     {"source", "conversation:" + hit.loop_id},
                     {"loop_id", hit.loop_id},
                     {"iteration", hit.iteration},
                     {"updated_at", iso_time(hit.at_ms)}};
      entry.text = std::move(hit.text);
      hits.push_back(std::move(entry));
    }
    std::stable_sort(hits.begin(), hits.end(),
                     [](const Hit& a, const Hit& b) { return a.rank < b.rank; });
    if (hits.size() > top_k) hits.resize(top_k);
  }
  json results = json::array();
  const std::size_t room =
      max_output_bytes > kEnvelopeBytes ? max_output_bytes - kEnvelopeBytes : 0;
  const std::size_t share = hits.empty() ? room : room / hits.size();
  for (Hit& hit : hits) {
    bool snippet_cut = false;
    std::string snippet =
        cut(hit.entry["snippet"].get<std::string>(), kMaxSnippetBytes, snippet_cut);
    if (snippet_cut) snippet += "...";
    hit.entry["snippet"] = std::move(snippet);
    const std::size_t used = hit.entry.dump().size();
    // A hit keeps a useful piece of its text unless the cap itself is
    // smaller than that (then the cap wins).
    const std::size_t budget =
        std::max(std::min(kMinHitTextBytes, share), share > used ? share - used : 0);
    bool cut_off = false;
    hit.entry["text"] = cut(hit.text, budget, cut_off);
    if (cut_off) hit.entry["text_truncated"] = true;
    results.push_back(std::move(hit.entry));
  }
  // The promise is the cap: with a cap too small for every hit's envelope,
  // the weakest hits go (and the message says so).
  std::size_t dropped = 0;
  while (!results.empty() &&
         results.dump(-1, ' ', false, json::error_handler_t::replace).size() + 256 >
             max_output_bytes) {
    results.erase(results.end() - 1);
    ++dropped;
  }
  const std::size_t found = results.size();
  std::string message =
      found == 0 && dropped == 0
          ? "nothing matches; try other words"
          : std::to_string(found) + (found == 1 ? " match" : " matches") + ", best first";
  if (dropped > 0) {
    message += "; " + std::to_string(dropped) +
               " more left out to fit the output cap (ask for a smaller top_k)";
  }
  return json{{"results", std::move(results)}, {"message", std::move(message)}};
}

}  // namespace

Notebook::Notebook(store::Store& store, const config::MemorySettings& limits)
    : store_(store), limits_(limits) {}

bool Notebook::handles(const std::string& tool) {
  return tool == "memory_save" || tool == "memory_update" || tool == "memory_delete" ||
         tool == "memory_search";
}

json Notebook::note_json(const store::MemoryNote& note) {
  return {{"note_id", note.note_id},
          {"text", note.content},
          {"tags", note.tags},
          {"scope", note.repo.empty() ? "user" : "repo"},
          {"repo", note.repo.empty() ? json(nullptr) : json(note.repo)},
          {"source", note.source},
          {"created_at", iso_time(note.created_at_ms)},
          {"updated_at", iso_time(note.updated_at_ms)}};
}

Result<json> Notebook::call(const std::string& tool, const json& args, const Caller& caller,
                            std::size_t max_output_bytes) {
  const auto max_bytes = static_cast<std::size_t>(limits_.max_note_bytes);
  auto check_size = [&](const std::string& content) -> Result<void> {
    if (content.size() <= max_bytes) return {};
    return make_error(errc::too_large,
                      "the note is " + std::to_string(content.size()) +
                          " bytes; a note holds at "
                          "most " +
                          std::to_string(max_bytes) + " ([memory] max_note_bytes)",
                      "keep only what a later loop needs, or split it into several notes");
  };
  auto visible = [&](const store::MemoryNote& note) {
    return note.repo.empty() || note.repo == caller.repo;
  };

  auto check_tags = [&](const json& tags) -> Result<void> {
    if (!tags.is_array()) return {};
    for (const json& tag : tags) {
      if (tag.is_string() && tag.get_ref<const std::string&>().size() > kMaxTagBytes) {
        return make_error(errc::invalid_arguments,
                          "a tag is " + std::to_string(tag.get_ref<const std::string&>().size()) +
                              " bytes; tags hold at most " + std::to_string(kMaxTagBytes),
                          "use a word or two as a tag; put the rest in the note's text");
      }
    }
    return {};
  };
  if (auto ok = check_tags(args.value("tags", json::array())); !ok) return std::move(ok).error();

  if (tool == "memory_save") {
    const std::string content = args.value("content", "");
    if (auto ok = check_size(content); !ok) return std::move(ok).error();
    const bool user_scope = scope_of(args) == "user";
    const std::string repo = user_scope ? std::string() : caller.repo;
    auto count = store_.count_notes(caller.uid, repo);
    if (!count) return std::move(count).error();
    if (*count >= limits_.max_notes) {
      return make_error(
          errc::too_large,
          std::string(user_scope ? "the user's own notes" : "this repository's notes") +
              " number " + std::to_string(*count) + ", the most [memory] max_notes allows",
          "delete notes no longer needed (memory_search, then memory_delete), or update one "
          "instead of saving a new note");
    }
    auto id = new_note_id();
    if (!id) return std::move(id).error();
    store::MemoryNote note;
    note.note_id = *id;
    note.owner_uid = caller.uid;
    note.repo = repo;
    note.content = content;
    note.tags = tags_of(args.value("tags", json::array()));
    note.source = caller.source;
    note.created_at_ms = note.updated_at_ms = now_ms();
    if (auto saved = store_.insert_note(note); !saved) return std::move(saved).error();
    return json{{"note_id", note.note_id},
                {"message", std::string("saved ") +
                                (user_scope ? "for the user (seen from every repository)"
                                            : "for this repository") +
                                "; memory_search finds it by its words"}};
  }

  if (tool == "memory_update" || tool == "memory_delete") {
    const std::string note_id = args.value("note_id", "");
    auto found = store_.find_note(caller.uid, note_id);
    if (!found) return std::move(found).error();
    if (!*found || !visible(**found)) return not_found(note_id);
    if (tool == "memory_delete") {
      auto deleted = store_.delete_note(caller.uid, note_id);
      if (!deleted) return std::move(deleted).error();
      if (!*deleted) return not_found(note_id);
      return json{{"note_id", note_id}, {"deleted", true}, {"message", "deleted"}};
    }
    const std::string content = args.value("content", "");
    if (auto ok = check_size(content); !ok) return std::move(ok).error();
    std::optional<std::vector<std::string>> tags;
    if (args.contains("tags")) tags = tags_of(args["tags"]);
    auto updated = store_.update_note(caller.uid, note_id, content, tags, now_ms());
    if (!updated) return std::move(updated).error();
    if (!*updated) return not_found(note_id);
    return json{{"note_id", note_id}, {"message", "updated; the note keeps its id"}};
  }

  if (tool == "memory_search") {
    const std::string query = args.value("query", "");
    const auto top_k = static_cast<std::size_t>(
        std::clamp<std::int64_t>(args.value("top_k", std::int64_t{5}), 1, 20));
    // repo: this repository's notes and the user's own; user: the user's
    // own only. Never another repository's: a loop in one repository does
    // not read (or act on) what loops of another kept.
    store::NoteScope scope{caller.uid, scope_of(args) == "user" ? "" : caller.repo};
    const bool conversation = args.value("include_conversation", false);
    return run_search(store_, scope, conversation ? &caller.repo : nullptr, query, top_k,
                      max_output_bytes);
  }

  return make_error(errc::invalid_arguments, "'" + tool + "' is not a memory tool");
}

Result<json> Notebook::list(std::int64_t uid, const std::optional<std::string>& repo,
                            std::size_t limit) const {
  auto notes = store_.list_notes(store::NoteScope{uid, repo}, limit);
  if (!notes) return std::move(notes).error();
  // A listing shows each note's beginning (a protocol line is at most
  // 16 MiB, and notes may be 1 MiB each); show() gives a note whole.
  json out = json::array();
  for (const store::MemoryNote& note : *notes) {
    json entry = note_json(note);
    bool cut_off = false;
    entry["text"] = cut(note.content, kListedTextBytes, cut_off);
    if (cut_off) entry["text_truncated"] = true;
    out.push_back(std::move(entry));
  }
  return json{{"notes", std::move(out)}};
}

Result<json> Notebook::search(std::int64_t uid, const std::optional<std::string>& repo,
                              const std::string& query, std::size_t top_k,
                              bool include_conversation) const {
  // The person reads whole notes: no output cap beyond the protocol's.
  constexpr std::size_t kPersonOutputBytes = std::size_t{4} * 1024 * 1024;
  return run_search(store_, store::NoteScope{uid, repo},
                    include_conversation && repo ? &*repo : nullptr, query,
                    std::clamp<std::size_t>(top_k, 1, 100), kPersonOutputBytes);
}

Result<json> Notebook::show(std::int64_t uid, const std::string& note_id) const {
  auto found = store_.find_note(uid, note_id);
  if (!found) return std::move(found).error();
  if (!*found) {
    return make_error(errc::not_found, "there is no note '" + note_id.substr(0, 80) + "'",
                      "`looprctl memory list` shows the notes and their ids");
  }
  return note_json(**found);
}

Result<json> Notebook::remove(std::int64_t uid, const std::string& note_id) {
  auto deleted = store_.delete_note(uid, note_id);
  if (!deleted) return std::move(deleted).error();
  if (!*deleted) {
    return make_error(errc::not_found, "there is no note '" + note_id.substr(0, 80) + "'",
                      "`looprctl memory list` shows the notes and their ids");
  }
  return json{{"note_id", note_id}, {"deleted", true}};
}

}  // namespace loopr::memory
