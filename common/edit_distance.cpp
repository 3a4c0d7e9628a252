#include "common/edit_distance.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace loopr {

std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t max) {
  if (a.size() > b.size()) std::swap(a, b);  // a is the shorter: rows run along b
  const std::size_t n = a.size();
  const std::size_t m = b.size();
  max = std::min(max, m);  // no distance exceeds the longer length
  const std::size_t over = max + 1;
  if (m - n > max) return over;

  // Rows i-2, i-1 and i of the table; cells outside the band hold `over`.
  std::vector<std::size_t> before(m + 1, over);
  std::vector<std::size_t> previous(m + 1, over);
  std::vector<std::size_t> current(m + 1, over);
  for (std::size_t j = 0; j <= max; ++j)
    previous[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    const std::size_t low = i > max ? i - max : 0;
    const std::size_t high = std::min(m, i + max);
    std::size_t row_min = over;
    if (low == 0) {
      current[0] = i;
      row_min = i;
    } else {
      current[low - 1] = over;
    }
    for (std::size_t j = std::max<std::size_t>(low, 1); j <= high; ++j) {
      const bool same = a[i - 1] == b[j - 1];
      std::size_t cell = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + !same});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cell = std::min(cell, before[j - 2] + 1);
      }
      current[j] = std::min(cell, over);
      row_min = std::min(row_min, current[j]);
    }
    if (high < m) current[high + 1] = over;  // read as previous[j] by row i + 1
    if (row_min > max) return over;
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return std::min(previous[m], over);
}

}  // namespace loopr
