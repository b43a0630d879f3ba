#pragma once
//! A backend's own settings. A backend declares the keys it reads (Reducer::settings) and parses
//! them itself; they come from its table in the config file (`[backends.hybrid]`, or its plugin's
//! table, `[backends.cuda]`, for every backend of that plugin) and, per call, from
//! Options::settings. The core knows no backend's keys.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "xreduce/error.hpp"

namespace xreduce {

//! One setting a backend reads.
struct SettingInfo {
  std::string key;
  std::string default_value;  //!< as text, for `xreduce list --settings` and the docs
  std::string doc;            //!< one sentence: what it does
};

//! Key = value text, each value with where it came from (a config file's line, "the caller").
class Settings {
 public:
  struct Value {
    std::string text;
    std::string origin;
  };

  //! Sets `key`, replacing an earlier value. Throws Error(invalid_argument) for an empty key or a
  //! key or value with '=' (keys only) or a line break.
  Settings& set(std::string key, std::string value, std::string origin = "the caller");
  //! nullptr if unset.
  const Value* find(std::string_view key) const;
  bool empty() const { return values_.empty(); }
  const std::map<std::string, Value, std::less<>>& entries() const { return values_; }
  //! `over`'s values replace these.
  void merge(const Settings& over);
  //! Only the keys that `known` declares.
  Settings only(const std::vector<SettingInfo>& known) const;

  //! The value of `key` as a number in [low, high]; nullopt if unset. Throws
  //! Error(invalid_argument) naming the key, the value, the range and where the value came from.
  std::optional<double> number(std::string_view key, double low, double high) const;
  //! The same for a whole number (decimal, no sign for positive values needed).
  std::optional<std::int64_t> integer(std::string_view key, std::int64_t low, std::int64_t high) const;
  //! The value as it is; nullopt if unset.
  std::optional<std::string> text(std::string_view key) const;

  //! Throws Error(invalid_argument) if a key is not among `known`, naming it, `owner` and the valid keys.
  void check_keys(const std::vector<SettingInfo>& known, std::string_view owner) const;

  //! The plugin ABI's form: one "key=value" a line.
  std::string to_text() const;
  static Settings from_text(std::string_view text, const std::string& origin);

 private:
  std::map<std::string, Value, std::less<>> values_;
};

//! The plugin ABI's form of a list of SettingInfo: "key\tdefault\tdoc" a line; and back.
std::string settings_info_to_text(const std::vector<SettingInfo>& infos);
std::vector<SettingInfo> settings_info_from_text(std::string_view text);

// Inline, so that plugins, built against the headers alone, need nothing from the core.

namespace detail {

[[noreturn]] inline void bad_value(std::string_view key, const Settings::Value& v, const std::string& expected) {
  throw Error(ErrorCode::invalid_argument,
              "setting '" + std::string(key) + "' = '" + v.text + "' (from " + v.origin + "): " + expected);
}

inline std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty()) out.push_back(line);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  return out;
}

template <class T>
inline std::string text_of(T v) {
  char buffer[64];
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, r.ptr);
}

}  // namespace detail

inline Settings& Settings::set(std::string key, std::string value, std::string origin) {
  if (key.empty() || key.find_first_of("=\n\t") != std::string::npos || value.find('\n') != std::string::npos)
    throw Error(ErrorCode::invalid_argument, "setting '" + key + "': keys are non-empty and have no '=', tab or line "
                                             "break; values have no line break");
  values_.insert_or_assign(std::move(key), Value{std::move(value), std::move(origin)});
  return *this;
}

inline const Settings::Value* Settings::find(std::string_view key) const {
  const auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

inline void Settings::merge(const Settings& over) {
  for (const auto& [k, v] : over.values_) values_.insert_or_assign(k, v);
}

inline Settings Settings::only(const std::vector<SettingInfo>& known) const {
  Settings kept;
  for (const SettingInfo& info : known)
    if (const Value* v = find(info.key)) kept.values_.emplace(info.key, *v);
  return kept;
}

inline std::optional<double> Settings::number(std::string_view key, double low, double high) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  double x = 0;
  const char* first = v->text.data();
  const char* last = first + v->text.size();
  const auto r = std::from_chars(first, last, x);
  if (r.ec != std::errc() || r.ptr != last || !std::isfinite(x))
    detail::bad_value(key, *v, "not a number");
  if (!(x >= low && x <= high)) detail::bad_value(key, *v, "must be between " + detail::text_of(low) + " and " + detail::text_of(high));
  return x;
}

inline std::optional<std::int64_t> Settings::integer(std::string_view key, std::int64_t low, std::int64_t high) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  std::int64_t x = 0;
  const char* first = v->text.data();
  const char* last = first + v->text.size();
  const auto r = std::from_chars(first, last, x, 10);
  if (r.ec == std::errc::result_out_of_range) detail::bad_value(key, *v, "out of range (" + detail::text_of(low) + " to " + detail::text_of(high) + ")");
  if (r.ec != std::errc() || r.ptr != last) detail::bad_value(key, *v, "not a whole number");
  if (x < low || x > high) detail::bad_value(key, *v, "must be between " + detail::text_of(low) + " and " + detail::text_of(high));
  return x;
}

inline std::optional<std::string> Settings::text(std::string_view key) const {
  const Value* v = find(key);
  return v ? std::optional<std::string>(v->text) : std::nullopt;
}

inline void Settings::check_keys(const std::vector<SettingInfo>& known, std::string_view owner) const {
  for (const auto& [key, value] : values_) {
    bool found = false;
    for (const SettingInfo& info : known) found = found || info.key == key;
    if (found) continue;
    std::string valid;
    for (const SettingInfo& info : known) valid += (valid.empty() ? "" : ", ") + info.key;
    throw Error(ErrorCode::invalid_argument, "unknown setting '" + key + "' (from " + value.origin + ") for " +
                                                 std::string(owner) + "; " +
                                                 (valid.empty() ? std::string("it takes no settings") : "valid: " + valid));
  }
}

inline std::string Settings::to_text() const {
  std::string out;
  for (const auto& [k, v] : values_) out += k + "=" + v.text + "\n";
  return out;
}

inline Settings Settings::from_text(std::string_view text, const std::string& origin) {
  Settings s;
  for (std::string_view line : detail::lines(text)) {
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    s.set(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)), origin);
  }
  return s;
}

inline std::string settings_info_to_text(const std::vector<SettingInfo>& infos) {
  std::string out;
  auto clean = [](std::string t) {
    for (char& c : t)
      if (c == '\t' || c == '\n') c = ' ';
    return t;
  };
  for (const SettingInfo& i : infos) out += clean(i.key) + "\t" + clean(i.default_value) + "\t" + clean(i.doc) + "\n";
  return out;
}

inline std::vector<SettingInfo> settings_info_from_text(std::string_view text) {
  std::vector<SettingInfo> out;
  for (std::string_view line : detail::lines(text)) {
    const std::size_t a = line.find('\t');
    const std::size_t b = a == std::string_view::npos ? a : line.find('\t', a + 1);
    if (b == std::string_view::npos) continue;
    out.push_back({std::string(line.substr(0, a)), std::string(line.substr(a + 1, b - a - 1)), std::string(line.substr(b + 1))});
  }
  return out;
}

}  // namespace xreduce
