#include "tools/cli/cli_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nnops/dtype.hpp"

namespace nnops::cli {

std::string option_name(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    if (c == '_') c = '-';
  }
  return s;
}

std::string option_names(const std::string& name) {
  const std::string dashed = option_name(name);
  return dashed == name ? "--" + name : "--" + dashed + ",--" + name;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = v.size() / 2;
  return v.size() % 2 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

std::string format_time(double s) {
  char buf[32];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

}  // namespace nnops::cli
