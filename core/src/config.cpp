#include "xreduce/config.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <toml++/toml.h>

#include "xreduce/error.hpp"

namespace xreduce {
namespace {

std::string where(const std::string& origin, const toml::source_region& r) {
  return origin + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

[[noreturn]] void fail(const std::string& origin, const toml::node& node, const std::string& what) {
  throw Error(ErrorCode::config, where(origin, node.source()) + ": " + what);
}

template <class T>
T expect(const std::string& origin, const std::string& key, const toml::node& node, const char* type_name) {
  // The type first: toml++ converts a float to an integer without a range check (2e62 to
  // int64_t is undefined behaviour; the config fuzzer found it), so only an integer node is read
  // as one.
  const bool right_type = std::is_same_v<T, std::int64_t> ? node.is_integer()
                          : std::is_same_v<T, std::string> ? node.is_string()
                                                           : true;
  if (!right_type) fail(origin, node, "'" + key + "' must be " + type_name);
  auto v = node.value<T>();
  if (!v) fail(origin, node, "'" + key + "' must be " + type_name);
  return *v;
}

std::uint64_t expect_count(const std::string& origin, const std::string& key, const toml::node& node) {
  std::int64_t v = expect<std::int64_t>(origin, key, node, "a whole number");
  if (v < 0) fail(origin, node, "'" + key + "' must not be negative");
  return static_cast<std::uint64_t>(v);
}

//! A backend's table: scalar values as text (numbers in the shortest form that reads back), for
//! the backend to parse; it checks the keys when it is loaded.
void read_settings(const std::string& origin, const std::string& table_name, const toml::table& table, Settings& out) {
  for (auto&& [key, node] : table) {
    const std::string k(key.str());
    std::string text;
    if (auto v = node.value_exact<std::string>()) text = *v;
    else if (auto i = node.value_exact<std::int64_t>()) text = std::to_string(*i);
    else if (auto d = node.value_exact<double>()) {
      char buffer[64];
      text.assign(buffer, std::to_chars(buffer, buffer + sizeof buffer, *d).ptr);
    } else if (auto b = node.value_exact<bool>()) text = *b ? "true" : "false";
    else if (node.is_table())
      fail(origin, node, "'" + table_name + "." + k + "' is a table: quote a backend name that has a dot, [backends.\"" +
                             table_name.substr(table_name.find('.') + 1) + "." + k + "\"]");
    else fail(origin, node, "'" + table_name + "." + k + "' must be a string, number or boolean");
    try {
      out.set(k, text, where(origin, node.source()));
    } catch (const Error& e) {
      fail(origin, node, e.what());
    }
  }
}

//! A Config whose thresholds are this machine's defaults (DispatchConfig::defaults_for).
Config with_default_dispatch() {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  Config c;
  c.dispatch = DispatchConfig::defaults_for(threads);
  c.dispatch_defaults = DispatchConfig::defaults_source(threads);
  return c;
}

}  // namespace

Config Config::from_string(std::string_view text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw Error(ErrorCode::config, where(origin, e.source()) + ": " + std::string(e.description()));
  }
  Config c = with_default_dispatch();
  const std::filesystem::path base = std::filesystem::path(origin).parent_path();
  for (auto&& [key, node] : root) {
    const std::string k(key.str());
    if (k == "backend") {
      c.backend = expect<std::string>(origin, k, node, "a string (a backend name or \"auto\")");
      c.backend_source = where(origin, node.source());
    } else if (k == "threads") {
      std::int64_t t = expect<std::int64_t>(origin, k, node, "a whole number");
      if (t < 0 || t > kMaxThreads) fail(origin, node, "'threads' must be between 0 (all) and " + std::to_string(kMaxThreads));
      c.threads = static_cast<int>(t);
    } else if (k == "accuracy") {
      const auto text = expect<std::string>(origin, k, node, "a string: \"standard\" or \"exact\"");
      const auto a = parse_accuracy(text);
      if (!a) fail(origin, node, "'accuracy' must be \"standard\" or \"exact\", not \"" + text + "\"");
      c.accuracy = *a;
    } else if (k == "plugin_path") {
      const toml::array* list = node.as_array();
      if (!list) fail(origin, node, "'plugin_path' must be an array of strings");
      for (const toml::node& item : *list) {
        std::filesystem::path p(expect<std::string>(origin, k, item, "an array of strings"));
        c.plugin_path.push_back(p.is_relative() && !base.empty() ? base / p : p);
      }
    } else if (k == "dispatch") {
      const toml::table* t = node.as_table();
      if (!t) fail(origin, node, "'dispatch' must be a table");
      for (auto&& [dkey, dnode] : *t) {
        const std::string dk(dkey.str());
        const std::string key = "dispatch." + dk;
        // Under today's name: the old hybrid_min_count_* keys are cpu_gpu_min_count_* (below).
        c.dispatch_origins[dk.starts_with("hybrid_min_count_") ? "cpu_gpu_" + dk.substr(7) : dk] = where(origin, dnode.source());
        if (dk == "parallel_min_count") c.dispatch.parallel_min_count = expect_count(origin, key, dnode);
        else if (dk == "parallel_backend") c.dispatch.parallel_backend = expect<std::string>(origin, key, dnode, "a backend name");
        else if (dk == "parallel_large_min_count") c.dispatch.parallel_large_min_count = expect_count(origin, key, dnode);
        else if (dk == "parallel_backend_large") c.dispatch.parallel_backend_large = expect<std::string>(origin, key, dnode, "a backend name");
        else if (dk == "gpu_min_count_pinned") c.dispatch.gpu_min_count_pinned = expect_count(origin, key, dnode);
        else if (dk == "gpu_min_count_pageable") c.dispatch.gpu_min_count_pageable = expect_count(origin, key, dnode);
        else if (dk == "cpu_gpu_min_count_pinned") c.dispatch.cpu_gpu_min_count_pinned = expect_count(origin, key, dnode);
        else if (dk == "cpu_gpu_min_count_pageable") c.dispatch.cpu_gpu_min_count_pageable = expect_count(origin, key, dnode);
        else if (dk == "segment_cost") c.dispatch.segment_cost = expect_count(origin, key, dnode);
        else if (dk == "hybrid_min_count_pinned" || dk == "hybrid_min_count_pageable") {
          const std::string now = "cpu_gpu" + dk.substr(std::string("hybrid").size());
          (dk.ends_with("pinned") ? c.dispatch.cpu_gpu_min_count_pinned : c.dispatch.cpu_gpu_min_count_pageable) =
              expect_count(origin, key, dnode);
          c.notes.push_back(where(origin, dnode.source()) + ": [dispatch] " + dk + " is now [dispatch] " + now +
                            "; read from its old name");
        } else
          fail(origin, dnode, "unknown key '" + key +
                                  "'; valid: parallel_min_count, parallel_backend, parallel_large_min_count, parallel_backend_large, "
                                  "gpu_min_count_pinned, gpu_min_count_pageable, cpu_gpu_min_count_pinned, cpu_gpu_min_count_pageable, "
                                  "segment_cost");
      }
    } else if (k == "backends") {
      const toml::table* t = node.as_table();
      if (!t) fail(origin, node, "'backends' must be a table of tables: [backends.NAME]");
      for (auto&& [name, table] : *t) {
        const toml::table* settings = table.as_table();
        if (!settings) fail(origin, table, "'backends." + std::string(name.str()) + "' must be a table");
        read_settings(origin, "backends." + std::string(name.str()), *settings, c.backend_settings[std::string(name.str())]);
      }
    } else if (k == "hybrid") {  // before [backends.hybrid] existed
      const toml::table* t = node.as_table();
      if (!t) fail(origin, node, "'hybrid' must be a table");
      read_settings(origin, "hybrid", *t, c.backend_settings["hybrid"]);
      c.notes.push_back(where(origin, node.source()) + ": [hybrid] is now [backends.hybrid]; read from its old place");
    } else {
      fail(origin, node, "unknown key '" + k + "'; valid: backend, threads, accuracy, plugin_path, [dispatch], [backends.NAME]");
    }
  }
  return c;
}

Config Config::from_file(const std::filesystem::path& file) {
  // A folder opens as an empty stream, which would read as an empty config.
  std::error_code ec;
  if (std::filesystem::exists(file, ec) && !std::filesystem::is_regular_file(file, ec))
    throw Error(ErrorCode::config, "config file " + file.string() + " is not a regular file (a folder?)");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorCode::config, "cannot read config file " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  Config c = from_string(text.str(), file.string());
  c.file = file;
  return c;
}

std::optional<std::string> Config::process_environment(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

std::filesystem::path Config::user_file(const Environment& env) {
  if (auto xdg = env("XDG_CONFIG_HOME"); xdg && !xdg->empty()) return std::filesystem::path(*xdg) / "xreduce" / "config.toml";
  if (auto home = env("HOME"); home && !home->empty()) return std::filesystem::path(*home) / ".config" / "xreduce" / "config.toml";
  return {};
}

Config Config::load(const Environment& env) {
  Config c = with_default_dispatch();
  if (auto named = env("XREDUCE_CONFIG"); named && !named->empty()) {
    if (!std::filesystem::exists(*named))
      throw Error(ErrorCode::config, "XREDUCE_CONFIG names " + *named + ", which does not exist");
    c = from_file(*named);
  } else if (auto user = user_file(env); !user.empty() && std::filesystem::exists(user)) {
    c = from_file(user);
  }
  if (auto b = env("XREDUCE_BACKEND"); b && !b->empty()) {
    c.backend = *b;
    c.backend_source = "XREDUCE_BACKEND";
  }
  if (auto paths = env("XREDUCE_PLUGIN_PATH"); paths && !paths->empty()) {
    c.plugin_path.clear();
    std::stringstream list(*paths);
    for (std::string item; std::getline(list, item, ':');)
      if (!item.empty()) c.plugin_path.emplace_back(item);
  }
  return c;
}

}  // namespace xreduce
