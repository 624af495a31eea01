#include "cli.h"

#include <stdexcept>

namespace fs {

CommandLine::CommandLine(int argc, char** argv, std::vector<std::string> flags) {
  auto is_flag = [&](const std::string& n) {
    for (const auto& f : flags)
      if (f == n) return true;
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + arg + "'");
    arg = arg.substr(2);
    const auto eq = arg.find('=');
    if (eq != std::string::npos) {
      values_[arg.substr(0, eq)] = arg.substr(eq + 1);
    } else if (is_flag(arg)) {
      values_[arg] = "1";
    } else {
      if (i + 1 >= argc) throw std::invalid_argument("--" + arg + " needs a value");
      values_[arg] = argv[++i];
    }
  }
}

std::string CommandLine::get(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  read_[name] = true;
  return it->second;
}

int64_t CommandLine::get_int(const std::string& name, int64_t fallback) const {
  const std::string v = get(name, "");
  if (v.empty()) return fallback;
  std::size_t used = 0;
  const long long x = std::stoll(v, &used);
  if (used != v.size()) throw std::invalid_argument("--" + name + " expects an integer, got '" + v + "'");
  return x;
}

double CommandLine::get_double(const std::string& name, double fallback) const {
  const std::string v = get(name, "");
  if (v.empty()) return fallback;
  std::size_t used = 0;
  const double x = std::stod(v, &used);
  if (used != v.size()) throw std::invalid_argument("--" + name + " expects a number, got '" + v + "'");
  return x;
}

bool CommandLine::get_bool(const std::string& name, bool fallback) const {
  const std::string v = get(name, "");
  if (v.empty()) return fallback;
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  throw std::invalid_argument("--" + name + " expects 0/1, got '" + v + "'");
}

std::vector<std::string> CommandLine::unread() const {
  std::vector<std::string> out;
  for (const auto& [name, value] : values_)
    if (!read_.count(name)) out.push_back("--" + name);
  return out;
}

}  // namespace fs
