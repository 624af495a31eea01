// A small command-line parser for the stage executables: --name value, --name=value, --flag.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fs {

class CommandLine {
 public:
  // `flags` are options that take no value (--causal); every other option takes one.
  CommandLine(int argc, char** argv, std::vector<std::string> flags);
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;
  std::string get(const std::string& name, const std::string& fallback) const;
  bool get_bool(const std::string& name, bool fallback) const;  // --x, --x=1/0/true/false
  // Options given but never read: a typo must not be silently ignored.
  std::vector<std::string> unread() const;

 private:
  std::map<std::string, std::string> values_;
  mutable std::map<std::string, bool> read_;
};

}  // namespace fs
