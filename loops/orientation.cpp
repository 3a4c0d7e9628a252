#include "loops/orientation.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <string_view>

#include "common/utf8.hpp"
#include "loops/git/git_support.hpp"

namespace loopr::loops {
namespace {

struct Node {
  std::map<std::string, std::unique_ptr<Node>> dirs;
  std::vector<std::string> files;
  std::size_t file_count = 0;  // in the whole subtree
};

void insert(Node& root, const std::string& path) {
  Node* node = &root;
  node->file_count += 1;
  std::size_t at = 0;
  while (true) {
    const std::size_t slash = path.find('/', at);
    if (slash == std::string::npos) {
      node->files.push_back(path.substr(at));
      return;
    }
    auto& child = node->dirs[path.substr(at, slash - at)];
    if (!child) child = std::make_unique<Node>();
    node = child.get();
    node->file_count += 1;
    at = slash + 1;
  }
}

std::size_t depth_of(const Node& node) {
  std::size_t deepest = 0;
  for (const auto& [name, child] : node.dirs)
    deepest = std::max(deepest, 1 + depth_of(*child));
  return deepest;
}

// Folders first, then files, each sorted; folders at `max_depth` are folded.
void render(const Node& node, std::size_t depth, std::size_t max_depth, std::string& out,
            std::size_t& shown) {
  const std::string indent(depth * 2, ' ');
  for (const auto& [name, child] : node.dirs) {
    if (depth + 1 >= max_depth) {
      out += indent + name + "/ (" + std::to_string(child->file_count) + " files)\n";
    } else {
      out += indent + name + "/\n";
      render(*child, depth + 1, max_depth, out, shown);
    }
  }
  std::vector<std::string> files = node.files;
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    out += indent + file + '\n';
    shown += 1;
  }
}

std::vector<std::string> split_nul(const std::string& text) {
  std::vector<std::string> items;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    if (end > at) items.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return items;
}

}  // namespace

TreeDrawing draw_tree(const std::vector<std::string>& paths, std::size_t max_bytes) {
  Node root;
  for (const std::string& path : paths)
    if (!path.empty()) insert(root, path);
  TreeDrawing drawing;
  const std::size_t deepest = depth_of(root) + 1;
  for (std::size_t max_depth = deepest; max_depth >= 1; --max_depth) {
    std::string text;
    std::size_t shown = 0;
    render(root, 0, max_depth, text, shown);
    if (text.size() <= max_bytes || max_depth == 1) {
      drawing.text = std::move(text);
      drawing.files_shown = shown;
      break;
    }
  }
  if (drawing.text.size() > max_bytes) {
    // Even the top level is too long: whole lines from the top.
    const std::size_t budget = max_bytes > 80 ? max_bytes - 80 : 0;
    std::size_t end = drawing.text.rfind('\n', budget == 0 ? 0 : budget - 1);
    end = end == std::string::npos || budget == 0 ? 0 : end + 1;
    const std::size_t left_out = static_cast<std::size_t>(std::count(
        drawing.text.begin() + static_cast<std::ptrdiff_t>(end), drawing.text.end(), '\n'));
    std::size_t shown = 0;  // file lines kept: not "name/" nor "name/ (N files)"
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < end; ++i) {
      if (drawing.text[i] != '\n') continue;
      const std::string_view line(drawing.text.data() + line_start, i - line_start);
      if (!line.ends_with("/") && !line.ends_with(" files)")) shown += 1;
      line_start = i + 1;
    }
    drawing.text.resize(end);
    drawing.text += "... (" + std::to_string(left_out) + " more entries)\n";
    drawing.files_shown = shown;
  }
  return drawing;
}

Result<Orientation> orient(const WorktreeInfo& worktree, const std::string& base_commit,
                           const config::ContextSettings& settings) {
  auto git = detail::worktree_git(worktree);
  if (!git) return std::move(git).error();
  GitRunOptions read;
  read.read_only = true;
  read.timeout = std::chrono::seconds(30);
  Orientation out;

  for (const std::string& file : settings.instructions_files) {
    if (settings.instructions_max_bytes == 0) break;
    // Exists at HEAD as a file (blob)? `cat-file -t` says without printing it.
    auto kind = git->run({"cat-file", "-t", "HEAD:" + file}, read);
    if (!kind || !kind->succeeded() || detail::trim(kind->out) != "blob") continue;
    GitRunOptions capped = read;
    capped.output_cap = static_cast<std::uint64_t>(settings.instructions_max_bytes) + 4096;
    auto text = git->run({"cat-file", "blob", "HEAD:" + file}, capped);
    if (!text || !text->succeeded()) continue;
    out.instructions_file = file;
    std::string body = to_lossy_utf8(text->out);
    const auto cap = static_cast<std::size_t>(settings.instructions_max_bytes);
    if (body.size() > cap || text->out_truncated) {
      std::size_t end = body.rfind('\n', cap == 0 ? 0 : cap - 1);
      end = end == std::string::npos ? utf8_safe_prefix(body, cap) : end + 1;
      body.resize(end);
      out.instructions_cut = true;
    }
    out.instructions = std::move(body);
    break;
  }

  if (settings.tree_max_bytes > 0) {
    auto listing = git->run({"ls-files", "-z", "--cached", "--others", "--exclude-standard"}, read);
    if (listing && listing->succeeded()) {
      std::vector<std::string> paths = split_nul(listing->out);
      std::sort(paths.begin(), paths.end());
      paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
      for (std::string& path : paths)
        path = to_lossy_utf8(path);
      out.tree_files = paths.size();
      TreeDrawing drawing = draw_tree(paths, static_cast<std::size_t>(settings.tree_max_bytes));
      out.tree = std::move(drawing.text);
      out.tree_files_shown = drawing.files_shown;
    }
  }

  if (detail::is_sha(base_commit)) {
    auto stat = git->run({"diff", "--stat=100", "--no-ext-diff", "--no-textconv", "--no-color",
                          base_commit + "..HEAD", "--"},
                         read);
    if (stat && stat->succeeded()) {
      std::string text = to_lossy_utf8(stat->out);
      if (text.size() > 4096) {
        const std::size_t end = text.rfind('\n', 4000);
        text = text.substr(0, end == std::string::npos ? 4000 : end + 1) +
               "... (the rest of the list is cut; run `git diff --stat " +
               base_commit.substr(0, 12) + "` to see it)\n";
      }
      out.diff_stat = std::move(text);
    }
  }
  return out;
}

}  // namespace loopr::loops
