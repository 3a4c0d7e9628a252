#include "client/loop_tree.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <ostream>

#include "client/loop_view.hpp"
#include "client/text_format.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

constexpr std::size_t kTreeReasonWidth = 40;

// Box drawing: a child that has a sibling below it, the last child, and what
// stands under each of them for the rows of their own children.
constexpr const char* kBranch = "\xe2\x94\x9c\xe2\x94\x80 ";      // "├─ "
constexpr const char* kLastBranch = "\xe2\x94\x94\xe2\x94\x80 ";  // "└─ "
constexpr const char* kUnderBranch = "\xe2\x94\x82  ";            // "│  "
constexpr const char* kUnderLast = "   ";

double created_at(const json& loop) {
  return number_of(member(loop, "created_at_ms")).value_or(0);
}

std::string elapsed(const json& loop) {
  const auto created = number_of(member(loop, "created_at_ms"));
  const auto updated = number_of(member(loop, "updated_at_ms"));
  if (!created || !updated || *created <= 0 || *updated < *created) return "-";
  return format_duration_ms(*updated - *created);
}

bool needs_reason(const std::string& status) {
  return status == "failed" || status == "blocked" || status == "budget_exhausted" ||
         status == "stuck";
}

}  // namespace

std::vector<TreeRow> loop_tree_rows(const json& loops) {
  std::vector<const json*> items;
  std::map<std::string, std::size_t, std::less<>> index;
  if (loops.is_array()) {
    for (const json& loop : loops) {
      const std::string id = string_of(loop, "id");
      if (id.empty() || index.count(id) != 0) continue;
      index.emplace(id, items.size());
      items.push_back(&loop);
    }
  }
  const auto find = [&](const std::string& id) -> std::optional<std::size_t> {
    const auto it = index.find(id);
    if (it == index.end()) return std::nullopt;
    return it->second;
  };

  std::vector<std::optional<std::size_t>> parent(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto found = find(string_of(*items[i], "parent_id"));
    if (found && *found != i) parent[i] = found;
  }
  std::vector<std::vector<std::size_t>> children(items.size());
  std::vector<bool> listed(items.size(), false);
  for (std::size_t p = 0; p < items.size(); ++p) {
    const json& names = member(*items[p], "children");
    if (!names.is_array()) continue;
    for (const json& name : names) {
      if (!name.is_string()) continue;
      const auto child = find(name.get<std::string>());
      if (!child || parent[*child] != p || listed[*child]) continue;
      children[p].push_back(*child);
      listed[*child] = true;
    }
  }
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!parent[i]) {
      roots.push_back(i);
    } else if (!listed[i]) {
      children[*parent[i]].push_back(i);
    }
  }
  std::stable_sort(roots.begin(), roots.end(), [&](std::size_t a, std::size_t b) {
    return created_at(*items[a]) < created_at(*items[b]);
  });

  std::vector<TreeRow> rows;
  std::vector<bool> visited(items.size(), false);
  struct Frame {
    std::size_t node;
    std::size_t depth;
    std::string lead;
    std::string under;  // the lead of its children's rows, before their branch
  };
  const auto walk = [&](std::size_t root) {
    std::vector<Frame> stack = {Frame{root, 0, "", ""}};
    while (!stack.empty()) {
      Frame frame = std::move(stack.back());
      stack.pop_back();
      if (visited[frame.node]) continue;
      visited[frame.node] = true;
      rows.push_back(TreeRow{items[frame.node], frame.depth, frame.lead});
      const auto& kids = children[frame.node];
      for (std::size_t k = kids.size(); k-- > 0;) {
        if (frame.depth >= kMaxTreeDepth) {
          stack.push_back(Frame{kids[k], frame.depth + 1, frame.lead, frame.under});
          continue;
        }
        const bool last = k + 1 == kids.size();
        stack.push_back(Frame{kids[k], frame.depth + 1,
                              frame.under + (last ? kLastBranch : kBranch),
                              frame.under + (last ? kUnderLast : kUnderBranch)});
      }
    }
  };
  for (const std::size_t root : roots)
    walk(root);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!visited[i]) walk(i);
  }
  return rows;
}

std::string status_with_reason(const json& loop, std::size_t reason_width, bool every_reason) {
  const std::string status = loop_status(loop);
  std::string why;
  if (status == "queued") why = string_of(loop, "queue_reason");
  if (why.empty() && (every_reason || needs_reason(status))) why = string_of(loop, "status_reason");
  std::string text = status_cell(loop);
  if (!why.empty()) text += " (" + first_line(why, reason_width) + ")";
  return text;
}

void print_loop_tree(const json& loops, std::ostream& out) {
  TextTable table({"ID", "TYPE", "STATUS", "ITER", "ELAPSED", "TOKENS", "COST", "MERGED"});
  for (const TreeRow& row : loop_tree_rows(loops)) {
    const json& loop = *row.loop;
    const json& usage = member(loop, "usage");
    const json& merged = member(loop, "merged");
    table.add_row({row.lead + cell(loop, "id"), cell(loop, "type"),
                   status_with_reason(loop, kTreeReasonWidth),
                   cell(loop, "iteration") + "/" + cell(loop, "max_iterations"), elapsed(loop),
                   format_token_total(usage), format_usd(member(usage, "cost_usd")),
                   merged.is_null() ? "" : "merged"});
  }
  if (table.rows() == 0) {
    out << "no loops\n";
    return;
  }
  table.print(out);
}

}  // namespace loopr::client
