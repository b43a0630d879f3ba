#include "config_binding.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <string>
#include <vector>

#include "state.hpp"
#include "xreduce/config.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace xreduce::python {
namespace {

//! Stateless: every property reads or replaces State's Config.
struct ConfigView {};

//! Changes one field of a copy of the configuration and puts it in force.
void edit(const std::function<void(Config&)>& change) {
  Config c = State::get().config();
  change(c);
  State::get().set_config(std::move(c));
}

std::string describe(const Config& c) {
  std::string plugins;
  for (const auto& p : c.plugin_path) plugins += (plugins.empty() ? "'" : ", '") + p.string() + "'";
  return "Config(path=" + (c.file.empty() ? std::string("None") : "'" + c.file.string() + "'") + ", backend='" +
         c.backend + "', accuracy='" + std::string(to_string(c.accuracy)) + "', threads=" + std::to_string(c.threads) +
         ", plugin_path=[" + plugins + "])";
}

}  // namespace

void bind_config(nb::module_& m) {
  nb::class_<ConfigView>(m, "Config",
                         "The configuration in force: the file named by XREDUCE_CONFIG, else the user's file, with "
                         "XREDUCE_BACKEND and XREDUCE_PLUGIN_PATH over it. Setting a property applies to the calls "
                         "that follow, in this process only; the file is not written.")
      .def_prop_ro(
          "path", [](ConfigView&) -> std::optional<std::string> {
            const Config c = State::get().config();
            return c.file.empty() ? std::nullopt : std::optional<std::string>(c.file.string());
          },
          "The file that was read; None if none.")
      .def_prop_ro(
          "user_path", [](ConfigView&) { return Config::user_file().string(); },
          "Where the user's file is looked for ($XDG_CONFIG_HOME or ~/.config, xreduce/config.toml).")
      .def_prop_rw(
          "backend", [](ConfigView&) { return State::get().config().backend; },
          [](ConfigView&, const std::string& name) {
            edit([&](Config& c) {
              c.backend = name;
              c.backend_source = "xreduce.config";
            });
          },
          "The backend calls use when they name none: a registered name or \"auto\".")
      .def_prop_rw(
          "accuracy", [](ConfigView&) { return std::string(to_string(State::get().config().accuracy)); },
          [](ConfigView&, const std::string& name) {
            const auto accuracy = parse_accuracy(name);
            if (!accuracy) throw nb::value_error(("xreduce: unknown accuracy '" + name + "'; choose standard or exact").c_str());
            edit([&](Config& c) { c.accuracy = *accuracy; });
          },
          "How float sums are rounded when a call does not say: \"standard\" or \"exact\".")
      .def_prop_rw(
          "threads", [](ConfigView&) { return State::get().config().threads; },
          [](ConfigView&, int threads) {
            if (threads < 0 || threads > Config::kMaxThreads)
              throw nb::value_error(("xreduce: threads must be 0 (all) to " + std::to_string(Config::kMaxThreads)).c_str());
            edit([&](Config& c) { c.threads = threads; });
          },
          "CPU threads for the parallel backends when a call does not say; 0: all.")
      .def_prop_rw(
          "plugin_path",
          [](ConfigView&) {
            std::vector<std::string> out;
            for (const auto& p : State::get().config().plugin_path) out.push_back(p.string());
            return out;
          },
          [](ConfigView&, const std::vector<std::string>& places) {
            edit([&](Config& c) { c.plugin_path.assign(places.begin(), places.end()); });
          },
          "Extra plugin folders or files, loaded when set (besides the modules beside the package).")
      .def_prop_ro(
          "notes", [](ConfigView&) { return State::get().context()->notes(); },
          "What the configuration has to say that is no error (keys read from their old places, tables "
          "that name no loaded backend).")
      .def(
          "load",
          [](ConfigView&, std::optional<std::string> path) {
            if (!path) {
              State::get().set_config(Config::load());
              return;
            }
            // As if XREDUCE_CONFIG named it: the environment's other variables still apply.
            State::get().set_config(Config::load([&](const char* name) -> std::optional<std::string> {
              if (std::string_view(name) == "XREDUCE_CONFIG") return *path;
              return Config::process_environment(name);
            }));
          },
          "path"_a = nb::none(),
          "Reads a TOML config file (None: the default places again) and puts it in force. Raises "
          "xreduce.Error (code 'config') naming the file and line of a bad setting.")
      .def("__repr__", [](ConfigView&) { return describe(State::get().config()); });
  m.attr("config") = nb::cast(ConfigView{});
}

}  // namespace xreduce::python
