// looprd's Store (DESIGN.md §1, §6 step 6): the daemon's durable record, an
// SQLite database <state_dir>/loopr.db in WAL mode: every tool call, every
// loop and each loop's journal, the memory notes loops keep (memory_notes.cpp)
// the repositories the user trusts (schema version 4; repo_trust.cpp) and the
// approval rules saved by `looprctl approve --always` (schema version 5;
// approval_rules.cpp).
//
// Schema versions live in PRAGMA user_version and grow by appending a step to
// store_migrations() (store.cpp). A step is never edited once released: a
// database written by an older loopr is upgraded step by step on open, each
// step in its own transaction together with its version bump, so a failed
// step leaves the database at the previous version, unchanged. A database
// from a newer loopr is refused and left untouched. The Store never deletes
// data, except a memory note its owner deletes (delete_note: gone from the
// table and from the search index in the same transaction) and a saved
// approval rule the user forgets (delete_approval_rule).
//
// Threads: a Store belongs to one thread (looprd's io thread). The connection
// is opened without SQLite's own mutex; calls from two threads are a bug.
// File descriptors: SQLite opens loopr.db, loopr.db-wal and loopr.db-shm
// itself, all O_CLOEXEC; the Store owns the connection and closes it (and so
// those fds) when destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

namespace loopr::store {

// One finished tool call (DESIGN.md §6 step 6).
struct ToolCallRecord {
  std::string call_id;
  std::string tool;
  std::string lane;
  std::string worktree;
  std::string session;      // client session or loop id
  std::string args_digest;  // "sha256:..." of the canonical args JSON (see args_digest())
  std::string status;       // one of kToolCallStatuses
  std::optional<std::int32_t> exit_code;
  std::int64_t duration_ms = 0;
  bool truncated = false;
  std::string error_code;          // empty when none (stored as NULL)
  std::int64_t started_at_ms = 0;  // unix ms
  // Who ran it: a worker's id (docs/cluster.md), or "local" (this machine).
  std::string worker = "local";

  bool operator==(const ToolCallRecord&) const = default;
};

// The worker a call run on this machine names.
inline const std::string kLocalWorker = "local";

// The statuses a tool call ends with: the runner's five (DESIGN.md §4), plus
// "denied" (policy or approval said no) and "invalid" (arguments refused
// before dispatch).
inline constexpr std::string_view kToolCallStatuses[] = {
    "success", "failed", "timeout", "cancelled", "error", "denied", "invalid"};

// Longest text field a record may carry (a worktree path is under PATH_MAX).
// Fields come partly from clients (session), so the store caps them.
inline constexpr std::size_t kMaxToolCallFieldBytes = 4096;
// recent_tool_calls() returns at most this many rows, whatever the limit.
inline constexpr std::size_t kMaxRecentToolCalls = 10000;

// "sha256:<64 hex digits>" of args.dump(). nlohmann::json keeps object keys
// sorted, so equal arguments give equal digests whatever their key order.
// Invalid UTF-8 in a string (impossible for parsed JSON) is digested as U+FFFD.
std::string args_digest(const nlohmann::json& args);
// "sha256:<64 hex digits>" of `bytes` (a repository's trusted file, repo_trust).
std::string sha256_digest(std::string_view bytes);

// One step of the schema history: the SQL that takes the database from
// version - 1 to version. SQL only, no values; it runs in a transaction that
// also sets user_version to `version`.
struct StoreMigration {
  int version = 0;
  std::string_view summary;  // named in the error if the step fails
  std::string_view sql;
};

// The schema history this build knows, versions 1, 2, ... in order. Its last
// version is the current one.
std::span<const StoreMigration> store_migrations();

// One loop as the store keeps it (DESIGN.md §8). `spec` (what was asked:
// type, task, repo, limits) and `state` (where it is: iteration, usage,
// counters) are JSON objects owned by the loop engine; the store checks only
// that they are objects.
struct LoopRow {
  std::string id;
  std::int64_t seq = 0;  // creation order, from next_loop_seq()
  std::string type;
  std::string parent_id;  // empty: none
  std::string status;
  nlohmann::json spec = nlohmann::json::object();
  nlohmann::json state = nlohmann::json::object();
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;

  bool operator==(const LoopRow&) const = default;
};

// One entry of a loop's journal: everything the loop did, in order (model
// turns, tool calls and results, validations, notes, status changes). The
// journal is append-only.
struct LoopStep {
  std::int64_t id = 0;  // increasing across the whole store
  std::string loop_id;
  std::int64_t iteration = 0;
  std::string kind;
  nlohmann::json data = nlohmann::json::object();
  std::int64_t at_ms = 0;

  bool operator==(const LoopStep&) const = default;
};

// Longest id, type or status, and the largest spec/state/step document.
inline constexpr std::size_t kMaxLoopFieldBytes = 256;
inline constexpr std::size_t kMaxLoopDocumentBytes = std::size_t{8} * 1024 * 1024;

// One memory note (issue 13): text a loop or its user keeps across loops and
// restarts. Notes belong to one user (owner_uid: the uid looprd serves) and
// either to one repository (`repo`, its realpath) or to the user alone
// (`repo` empty: seen from every repository).
struct MemoryNote {
  std::string note_id;  // "note-<uuid>"
  std::int64_t owner_uid = 0;
  std::string repo;
  std::string content;
  std::vector<std::string> tags;
  std::string source;  // who saved it: "loop:<id>", "client"
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;

  bool operator==(const MemoryNote&) const = default;
};

// Which of a user's notes a listing or a search sees: with `repo` set, that
// repository's notes and the user's own (repo empty); without, all of them.
struct NoteScope {
  std::int64_t owner_uid = 0;
  std::optional<std::string> repo;
};

// A search hit. `rank` is FTS5's bm25() (lower is better: more negative);
// `snippet` is the note's text around the matched words, each match between
// `open` and `close` as given to the search.
struct NoteHit {
  MemoryNote note;
  double rank = 0;
  std::string snippet;
};

// A hit in a loop's conversation: the text of one model turn (a journal step
// of kind model_turn) of a loop of the repository.
struct ConversationHit {
  std::int64_t step_id = 0;
  std::string loop_id;
  std::int64_t iteration = 0;
  std::int64_t at_ms = 0;
  std::string text;
  double rank = 0;
  std::string snippet;
};

// A repository whose .loopr/loopr.toml the user trusts (issue 25): its
// realpath and the "sha256:<hex>" of the file's bytes when trusted. A file
// with another hash is not honoured until trusted again (repos/).
struct RepoTrust {
  std::string repo;
  std::string file_hash;
  std::int64_t trusted_at_ms = 0;

  bool operator==(const RepoTrust&) const = default;
};

// An approval rule saved by `looprctl approve ID --always` (issue 27),
// scoped to one repository (its realpath): the rule's JSON
// (policy/always_rules.hpp reads it back).
struct SavedApprovalRule {
  std::int64_t id = 0;
  std::string repo;
  nlohmann::json rule;
  std::int64_t saved_at_ms = 0;
};

// How a search marks the matched words in snippets, and how long a snippet is.
struct SnippetStyle {
  std::string open = "**";
  std::string close = "**";
  std::string ellipsis = "...";
  int tokens = 24;  // FTS5 caps this at 64
};

// Longest note text and tag the store accepts (callers enforce their own,
// lower, limits with better messages; these guard the table).
inline constexpr std::size_t kMaxNoteBytes = std::size_t{1} * 1024 * 1024;

class Store {
 public:
  // Opens or creates <state_dir>/loopr.db (state_dir and missing parents are
  // created 0700, the database file 0600), sets WAL, synchronous=NORMAL,
  // foreign_keys and a busy timeout, and migrates the schema to the current
  // version. Throws loopr::StartupError, saying what to do, when the state
  // directory or the file cannot be created or opened, the file is not an
  // SQLite database, is another program's database, is corrupt, or has a
  // schema version newer than this build knows. A refused file is left byte
  // for byte as it was (beside a WAL-mode file SQLite may leave empty -wal
  // and -shm files).
  static Store open(const std::string& state_dir);
  // The same with another schema history (tests use it to exercise upgrades).
  // `migrations` must be numbered 1, 2, ... and begin with store_migrations().
  static Store open(const std::string& state_dir, std::span<const StoreMigration> migrations);

  // A moved-from Store may only be destroyed or assigned to.
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  // Path of the database file.
  const std::string& path() const;
  // The database's schema version (the current one once open() returned).
  int schema_version() const;

  // One INSERT through a cached prepared statement; on the daemon's hot path.
  // Refuses a record whose status is not in kToolCallStatuses (internal) or
  // whose text field exceeds kMaxToolCallFieldBytes (too_large).
  Result<void> record_tool_call(const ToolCallRecord& record);
  // The newest calls first (by started_at_ms, then by insertion), at most
  // min(limit, kMaxRecentToolCalls).
  Result<std::vector<ToolCallRecord>> recent_tool_calls(std::size_t limit) const;
  Result<std::int64_t> count_tool_calls() const;

  // ---- loops (loop_records.cpp) ----
  // The seq for a new loop: one more than the largest so far.
  Result<std::int64_t> next_loop_seq() const;
  // Inserts a new loop and, in the same transaction, its first journal step
  // (when `first_step` is given). A duplicate id is errc::invalid_arguments.
  Result<void> insert_loop(const LoopRow& row, const LoopStep* first_step = nullptr);
  // Inserts several loops (each with its optional first step) and, when
  // given, appends `parent_step` and writes `parent_row`'s status and state —
  // all in one transaction: a plan's children appear together or not at all.
  struct NewLoop {
    LoopRow row;
    std::optional<LoopStep> first_step;
  };
  Result<void> insert_loops(const std::vector<NewLoop>& loops, const LoopStep* parent_step,
                            const LoopRow* parent_row);
  // Appends `step` to its loop's journal and, in the same transaction, sets
  // the loop's status and state (when `row` is given): either both are
  // durable or neither. Returns the step's id.
  Result<std::int64_t> append_loop_step(const LoopStep& step, const LoopRow* row = nullptr);
  // Sets status, state and updated_at_ms of an existing loop (and its spec,
  // when row.spec is not null; append_loop_step's row likewise).
  Result<void> update_loop(const LoopRow& row);
  Result<std::optional<LoopRow>> find_loop(const std::string& id) const;
  // Every loop, oldest first.
  Result<std::vector<LoopRow>> all_loops() const;
  // A loop's journal, oldest first: from `after_id` on (exclusive), at most
  // `limit` steps; with `iteration`, only that iteration's steps.
  Result<std::vector<LoopStep>> loop_steps(const std::string& loop_id,
                                           std::optional<std::int64_t> iteration = std::nullopt,
                                           std::int64_t after_id = 0,
                                           std::size_t limit = 1000000) const;
  Result<std::int64_t> count_loop_steps(const std::string& loop_id) const;

  // ---- memory notes (memory_notes.cpp) ----
  // Each call is one transaction: the note and its search index change
  // together. `match` arguments are FTS5 query expressions, trusted: build
  // them from a person's or a model's text with memory::fts_query(), never
  // pass such text here.
  //
  // A duplicate note_id is errc::invalid_arguments; text over kMaxNoteBytes
  // is errc::too_large.
  Result<void> insert_note(const MemoryNote& note);
  // Replaces the content (and tags, when given) of `owner_uid`'s note;
  // false when the user has no such note.
  Result<bool> update_note(std::int64_t owner_uid, const std::string& note_id,
                           const std::string& content,
                           const std::optional<std::vector<std::string>>& tags,
                           std::int64_t updated_at_ms);
  // Deletes `owner_uid`'s note; false when the user has no such note.
  Result<bool> delete_note(std::int64_t owner_uid, const std::string& note_id);
  Result<std::optional<MemoryNote>> find_note(std::int64_t owner_uid,
                                              const std::string& note_id) const;
  // The notes of `scope`, most recently updated first, at most `limit`.
  Result<std::vector<MemoryNote>> list_notes(const NoteScope& scope, std::size_t limit,
                                             std::size_t offset = 0) const;
  // How many notes `owner_uid` keeps for exactly `repo` ("" : the user's own).
  Result<std::int64_t> count_notes(std::int64_t owner_uid, const std::string& repo) const;
  // The notes of `scope` matching `match`, best first (bm25), at most `limit`.
  Result<std::vector<NoteHit>> search_notes(const NoteScope& scope, const std::string& match,
                                            std::size_t limit,
                                            const SnippetStyle& style = {}) const;
  // Model turns of the loops of `repo` (their spec's repo; not loops the
  // user deleted, state.deleted) matching `match`, best first, at most
  // `limit`. Every model_turn step with text is indexed in the transaction
  // that appends it (append_loop_step; older journals
  // were indexed by the migration to version 3).
  Result<std::vector<ConversationHit>> search_conversation(const std::string& repo,
                                                           const std::string& match,
                                                           std::size_t limit,
                                                           const SnippetStyle& style = {}) const;

  // ---- repository trust (repo_trust.cpp) ----
  // Records (or replaces) the trust of `trust.repo`.
  Result<void> put_repo_trust(const RepoTrust& trust);
  // Forgets it; false when the repository was not trusted.
  Result<bool> delete_repo_trust(const std::string& repo);
  Result<std::optional<RepoTrust>> find_repo_trust(const std::string& repo) const;
  // Every trusted repository, by path.
  Result<std::vector<RepoTrust>> all_repo_trust() const;

  // ---- saved approval rules (approval_rules.cpp) ----
  // Saves `rules` for `repo`, all or none (one transaction); their ids in
  // order (a rule already saved for `repo` keeps its id and is not saved twice).
  Result<std::vector<std::int64_t>> save_approval_rules(const std::string& repo,
                                                        const std::vector<nlohmann::json>& rules);
  // The rules of `repo` (every repository's when empty), oldest first.
  Result<std::vector<SavedApprovalRule>> saved_approval_rules(const std::string& repo) const;
  // Forgets rule `id`; false when there is none.
  Result<bool> delete_approval_rule(std::int64_t id);

 private:
  struct State;
  explicit Store(std::unique_ptr<State> state);
  static void prepare_loop_statements(State& state);
  static void prepare_note_statements(State& state);
  std::unique_ptr<State> state_;
};

}  // namespace loopr::store
