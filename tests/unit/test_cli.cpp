// The command's exit codes and JSON shapes, run as a user would run it.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "xreduce/version.hpp"

namespace {

//! The files a test case writes go into a fresh folder of the system's temporary one, the
//! working folder while the test case runs, removed at its end (passed or failed): none are left
//! where the tests were started.
class InScratchFolder {
 public:
  InScratchFolder() : back_(std::filesystem::current_path()) {
    std::string name = (std::filesystem::temp_directory_path() / "xreduce-cli-test-XXXXXX").string();
    REQUIRE(mkdtemp(name.data()) != nullptr);
    folder_ = name;
    std::filesystem::current_path(folder_);
  }
  ~InScratchFolder() {
    std::error_code ignored;
    std::filesystem::current_path(back_, ignored);
    std::filesystem::remove_all(folder_, ignored);
  }
  InScratchFolder(const InScratchFolder&) = delete;
  InScratchFolder& operator=(const InScratchFolder&) = delete;

 private:
  std::filesystem::path back_, folder_;
};

struct Run {
  int code;
  std::string out;
};

//! Runs the command; `out` gets its standard output, and its error output too with `with_errors`.
Run xreduce(const std::string& args, const std::string& env = "", bool with_errors = false) {
  std::string cmd = env + " " XREDUCE_TEST_CLI " " + args + (with_errors ? " 2>&1" : " 2>/dev/null");
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

//! Writes a .npy file (format 2.0, whose header may be long) with `header` and no data.
void write_npy(const std::string& path, const std::string& header) {
  std::string h = header + std::string(64 - (12 + header.size() + 1) % 64, ' ') + "\n";
  const std::uint32_t length = static_cast<std::uint32_t>(h.size());
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x02\x00", 8);
  for (int k = 0; k < 4; ++k) out.put(static_cast<char>((length >> (8 * k)) & 0xff));
  out << h;
}

}  // namespace

TEST_CASE("cli: bad input is one line and exit 2: no signal, no hang") {
  const InScratchFolder scratch;
  // Each was a crash (SIGSEGV: a wrapped n * itemsize, a regex out of stack), a hang (a FIFO) or
  // a silently wrong answer (octal, hex, a missing --n, a conflicting --dtype).
  write_npy("cli-long-descr.npy", "{'descr': '<" + std::string(60000, 'f') + "', 'fortran_order': False, 'shape': (0,), }");
  std::string dims;
  for (int k = 0; k < 30000; ++k) dims += "1, ";
  write_npy("cli-long-shape.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }");
  write_npy("cli-structured.npy", "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (0,), }");
  write_npy("cli-huge-shape.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (9999999999999999999,), }");
  write_npy("cli-f32.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }");
  REQUIRE(mkfifo("cli-fifo", 0600) == 0);  // the scratch folder is fresh: nothing there by that name
  const std::vector<std::pair<std::string, std::string>> cases{
      {"run --op sum --dtype f32 --n -1", "--n -1"},
      {"run --op sum --dtype f32 --n=-1", "--n -1"},
      {"run --op sum --dtype f32 --n 99999999999999999999", "in decimal"},
      {"run --op sum --dtype f32 --n 18446744073709551615", "in decimal"},
      {"run --op sum --dtype f32 --n 4611686018427387904", "more bytes than this machine can address"},
      {"run --op sum --dtype f32 --n 010", "no leading zero"},
      {"run --op sum --dtype f32 --n 0x10", "in decimal"},
      {"run --op sum --dtype f32", "--dtype T with --n N"},
      {"run --op sum --dtype f32 --n 10 --threads -1", "--threads"},
      {"run --op sum --dtype f32 --n 10 --block-size 7", "--block-size"},
      {"run --op sum --input cli-fifo", "not a regular file"},
      {"run --op sum --input cli-long-descr.npy", "unsupported dtype"},
      {"run --op sum --input cli-long-shape.npy", "at most 16 extents"},
      {"run --op sum --input cli-structured.npy", "structured dtypes"},
      {"run --op sum --input cli-huge-shape.npy", "more than 2^62 elements"},
      {"run --op sum --input cli-f32.npy --dtype f64", "conflicts with"},
  };
  for (const auto& [args, says] : cases) {
    INFO("xreduce " << args);
    const Run r = xreduce(args, "timeout 60", true);  // 124 from timeout: a hang
    CHECK(r.code == 2);
    CHECK(r.out.find(says) != std::string::npos);
    CHECK(r.out.rfind("xreduce: error: ", 0) == 0);  // one style, the parser's errors too
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') <= 2);  // the message (and where to find help)
  }
}

TEST_CASE("cli: a plugin that claims what does not exist is refused, and the rest works") {
  for (const char* claim : {"engine", "support", "memory"}) {
    INFO(claim);
    const Run r = xreduce("list", std::string("XREDUCE_PLUGIN_PATH=" XREDUCE_TEST_FAULTY_PLUGIN " XREDUCE_FAULTY_CLAIM=") + claim);
    CHECK(r.code == 0);
    CHECK(r.out.find("plugin not loaded") != std::string::npos);
    CHECK(r.out.find(std::string("claims ") + (claim == std::string("support") ? "a support level" : claim == std::string("engine") ? "an engine" : "a dtype, op, layout, accuracy, memory space or pass")) != std::string::npos);
    CHECK(r.out.find("sequential") != std::string::npos);
  }
}

TEST_CASE("cli: --version prints the project's version") {
  const Run r = xreduce("--version");
  CHECK(r.code == 0);
  CHECK(r.out == std::string(XREDUCE_VERSION_STRING) + "\n");
}

TEST_CASE("cli: usage and input errors exit 2") {
  const InScratchFolder scratch;
  CHECK(xreduce("run --op nope --dtype f32 --n 10").code == 2);
  CHECK(xreduce("run --dtype f32 --n 10").code == 2);                      // --op missing
  CHECK(xreduce("run --op sum --n 10").code == 2);                         // no dtype
  CHECK(xreduce("run --op sum --dtype f32 --n 10 --backend nope").code == 2);
  CHECK(xreduce("run --op sum --input /nonexistent.npy").code == 2);
  CHECK(xreduce("run --op max --dtype f32 --n 0").code == 2);              // empty input
  CHECK(xreduce("frobnicate").code == 2);
  const Run bench = xreduce("bench nosuchsuite", "", /*with_errors=*/true);
  CHECK(bench.code == 2);
  CHECK(bench.out.find("error: ") != std::string::npos);
#ifdef XREDUCE_TEST_HAVE_BENCH
  CHECK(bench.out.find("nosuchsuite") != std::string::npos);  // the benchmark program's parser names it, in one line
#else
  CHECK(bench.out.find("xreduce_bench is missing") != std::string::npos);  // a build without the benchmarks says so
#endif
  CHECK(xreduce("run --op sum --dtype f32 --n 10", "XREDUCE_BACKEND=nope").code == 2);
  std::ofstream("cli-bad.npy") << "\x93NUMPY\x01\x00garbage";
  CHECK(xreduce("validate --op sum --input cli-bad.npy").code == 2);
  std::ofstream("cli-bad.toml") << "backend = [";
  CHECK(xreduce("list", "XREDUCE_CONFIG=cli-bad.toml").code == 2);
}

TEST_CASE("cli: --help exits 0 on every subcommand") {
  for (const char* sub : {"", "list", "run", "validate"}) {
    Run r = xreduce(std::string(sub) + " --help");
    CHECK(r.code == 0);
    CHECK(r.out.find("Usage") != std::string::npos);
  }
}

TEST_CASE("cli: run --json prints one document with the documented keys") {
  Run r = xreduce("run --op argmax --dtype i32 --n 1000 --seed 3 --backend sequential --json");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["backend"] == "sequential");
  CHECK(j["op"] == "argmax");
  CHECK(j["dtype"] == "i32");
  CHECK(j["n"] == 1000);
  CHECK(j.contains("value"));
  CHECK(j.contains("index"));
  CHECK(j["seconds"].get<double>() >= 0);
  Run s = xreduce("run --op sum --dtype f32 --n 100 --json");
  CHECK_FALSE(nlohmann::json::parse(s.out).contains("index"));
}

TEST_CASE("cli: --memory device reduces the data in a GPU's memory, or says why it cannot") {
  // Exact sums of the same seeded data, and of its rows as an N-D array over --axis 1: one value
  // whatever the memory and the engine. Without a GPU (or the CUDA module) a one-line reason.
  const std::string flat = "run --op sum --dtype f32 --n 100003 --seed 5 --accuracy exact --json";
  const std::string rows = "run --op max --dtype f16 --shape 301,17 --axis 1 --seed 6 --json";
  const Run host = xreduce(flat), device = xreduce(flat + " --memory device", "", true);
  REQUIRE(host.code == 0);
  if (device.code == 0) {
    CHECK(nlohmann::json::parse(device.out)["value"] == nlohmann::json::parse(host.out)["value"]);
    const Run host_rows = xreduce(rows), device_rows = xreduce(rows + " --memory device");
    REQUIRE(device_rows.code == 0);
    CHECK(nlohmann::json::parse(device_rows.out)["value"] == nlohmann::json::parse(host_rows.out)["value"]);
  } else {
    CHECK(device.code == 2);
    CHECK(device.out.find("device memory") != std::string::npos);
  }
  const Run distributed = xreduce("run --op sum --dtype f32 --n 10 --memory device --distributed", "", true);
  CHECK(distributed.code == 2);
  CHECK(distributed.out.find("--distributed") != std::string::npos);
  CHECK(xreduce("run --op sum --dtype f32 --n 10 --memory gpu").code == 2);
}

TEST_CASE("cli: --width K reduces records: value is a list of K column results") {
  Run r = xreduce("run --op min --dtype i32 --n 900 --width 9 --seed 5 --json");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["shape"] == nlohmann::json::array({100, 9}));
  CHECK(j["axes"] == nlohmann::json::array({0}));
  CHECK(j["result_shape"] == nlohmann::json::array({9}));
  REQUIRE(j["value"].is_array());
  CHECK(j["value"].size() == 9);
  Run v = xreduce("validate --op sum --dtype f64 --n 3000 --width 3 --json");
  CHECK(v.code == 0);
  CHECK(nlohmann::json::parse(v.out)["reference"].size() == 3);
  CHECK(xreduce("run --op sum --dtype f32 --n 10 --width 3").code == 2);   // not whole records
  Run arg = xreduce("run --op argmax --dtype f32 --n 9 --width 3 --json");  // the row of each column's maximum
  REQUIRE(arg.code == 0);
  const nlohmann::json arg_json = nlohmann::json::parse(arg.out);
  REQUIRE(arg_json["index"].size() == 3);
  for (const auto& i : arg_json["index"]) CHECK(i.get<int>() < 3);
  CHECK(xreduce("run --op sum --dtype f32 --n 9 --width 0").code == 2);
}

TEST_CASE("cli: validate agrees (exit 0), and exits 1 when an exact backend disagrees") {
  Run ok = xreduce("validate --op sum --dtype f32 --n 100000 --json");
  REQUIRE(ok.code == 0);
  auto j = nlohmann::json::parse(ok.out);
  CHECK(j.contains("reference"));
  REQUIRE(j["results"].size() >= 2);
  for (const auto& row : j["results"]) {
    CHECK(row.contains("backend"));
    CHECK(row.contains("value"));
    CHECK(row.contains("agrees"));
    // One schema: a backend that ran has its deviation (a number, or "inf") and no error; one
    // that did not has null for a value and its error as a string.
    if (row["value"].is_null()) {
      CHECK(row["error"].is_string());
      CHECK_FALSE(row.contains("deviation"));
    } else {
      CHECK((row["deviation"].is_number() || row["deviation"] == "inf"));
      CHECK_FALSE(row.contains("error"));
    }
  }
  Run bad = xreduce("validate --op sum --dtype f32 --n 1000", "XREDUCE_PLUGIN_PATH=" XREDUCE_TEST_BROKEN_PLUGIN);
  CHECK(bad.code == 1);
  CHECK(bad.out.find("test.off_by_one") != std::string::npos);
  CHECK(bad.out.find("DISAGREES") != std::string::npos);
}

TEST_CASE("cli: --accuracy exact: the same bits from every backend that sums exactly, a refusal from the rest") {
  Run v = xreduce("validate --op sum --dtype f32 --n 200000 --accuracy exact --json");
  REQUIRE(v.code == 0);
  auto j = nlohmann::json::parse(v.out);
  CHECK(j["accuracy"] == "exact");
  CHECK(j["tolerance"] == 0.0);
  for (const auto& row : j["results"]) {
    INFO(row.dump());
    CHECK(row["backend"] != "sequential.naive");  // declares no exact sums: not asked
    if (!row["value"].is_null()) CHECK(row["value"] == j["reference"]);
  }
  Run r = xreduce("run --op sum --dtype f64 --n 5000 --backend openmp --accuracy exact --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["accuracy"] == "exact");
  const Run refused = xreduce("run --op sum --dtype f64 --n 10 --backend sequential.naive --accuracy exact", "", true);
  CHECK(refused.code == 2);
  CHECK(refused.out.find("exact") != std::string::npos);
  CHECK(xreduce("run --op sum --dtype f64 --n 10 --accuracy precise").code == 2);
}

TEST_CASE("cli: the tour and list run") {
  Run tour = xreduce("");
  CHECK(tour.code == 0);
  CHECK(tour.out.find("auto picks") != std::string::npos);
  Run list = xreduce("list --json");
  REQUIRE(list.code == 0);
  const nlohmann::json backends = nlohmann::json::parse(list.out);
  CHECK(backends.size() >= 2);
  bool hybrid_settings = false;  // each backend's own settings are listed, with defaults
  for (const auto& b : backends) {
    REQUIRE(b["layouts"].is_array());  // the layout classes it reduces (records, --width K: outer)
    const auto& layouts = b["layouts"];
    const bool outer = std::find(layouts.begin(), layouts.end(), "outer") != layouts.end();
    if (b["backend"] == "sequential") CHECK((outer && layouts.size() == 6));
    if (b["backend"] == "sequential.naive") CHECK(!outer);
  }
  for (const auto& b : backends)
    if (b["backend"] == "hybrid")
      for (const auto& setting : b["settings"]) hybrid_settings |= setting["key"] == "gpu_fraction_pinned";
  CHECK(hybrid_settings);
  const std::string text = xreduce("list").out;
  CHECK(text.find("settings (config [backends.NAME]") != std::string::npos);
  // Columns line up whatever the longest name: every row's engine starts under "engine".
  std::size_t at = text.find("  backend ");
  REQUIRE(at != std::string::npos);
  const std::size_t line_start = at, column = text.find("engine", at) - line_start;
  int rows = 0;
  for (std::size_t begin = text.find('\n', at) + 1, end; (end = text.find('\n', begin)) != std::string::npos && end > begin; begin = end + 1) {
    const std::string row = text.substr(begin, end - begin);
    if (row.rfind("  plugin", 0) == 0) continue;
    INFO(row);
    REQUIRE(row.size() > column);
    CHECK(row[column - 1] == ' ');
    CHECK(row[column] != ' ');
    ++rows;
  }
  CHECK(rows >= 3);
}

TEST_CASE("cli: --set gives the running backend a setting of its own") {
  const InScratchFolder scratch;
  const std::string plugin = "XREDUCE_PLUGIN_PATH=" XREDUCE_TEST_EXAMPLE_PLUGIN;
  Run plain = xreduce("run --backend example.neumaier --op sum --dtype f64 --n 1000 --set compensation=none --json", plugin);
  CHECK(plain.code == 0);
  CHECK(xreduce("run --backend example.neumaier --op sum --dtype f64 --n 1000 --set compensation=maybe", plugin).code == 2);
  CHECK(xreduce("run --backend sequential --op sum --dtype f32 --n 10 --set warp=9").code == 2);  // not a setting of it
  CHECK(xreduce("run --backend sequential --op sum --dtype f32 --n 10 --set novalue").code == 2);
  // A config table that names nothing loaded is a note on stderr, not an error.
  std::ofstream("cli-note.toml") << "[backends.warp-drive]\nspeed = 9\n";
  CHECK(xreduce("run --op sum --dtype f32 --n 10", "XREDUCE_CONFIG=cli-note.toml").code == 0);
  std::ofstream("cli-warp-drive.toml") << "[dispatch]\nparallel_backend = \"warp-drive\"\n";
  const Run misspelt = xreduce("run --op sum --dtype f32 --n 10", "XREDUCE_CONFIG=cli-warp-drive.toml", true);
  CHECK(misspelt.code == 2);
  CHECK(misspelt.out.find("'warp-drive', which is not registered here; valid names: ") != std::string::npos);
  std::filesystem::create_directories("cli-config-folder");
  const Run folder = xreduce("run --op sum --dtype f32 --n 10", "XREDUCE_CONFIG=cli-config-folder", true);
  CHECK(folder.code == 2);
  CHECK(folder.out.find("not a regular file") != std::string::npos);
  const Run width = xreduce("run --op sum --dtype f32 --n 10 --width 0", "", true);
  CHECK(width.code == 2);
  CHECK(width.out.find("1 to 4294967296") != std::string::npos);
  std::ofstream("cli-bad-setting.toml") << "[backends.hybrid]\ngpu_fraction = 2\n";
  CHECK(xreduce("run --op sum --dtype f32 --n 10", "XREDUCE_CONFIG=cli-bad-setting.toml").code == 2);
}

TEST_CASE("cli: calibrate measures and writes the config file it is given") {
  const InScratchFolder scratch;
  Run dry = xreduce("calibrate --dry-run --max-count 65536");
  CHECK(dry.code == 0);
  CHECK(dry.out.find("parallel_min_count") != std::string::npos);
  Run wrote = xreduce("calibrate --max-count 65536 --config cli-calibrated.toml");
  CHECK(wrote.code == 0);
  std::ifstream written("cli-calibrated.toml");
  std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  CHECK(text.find("[dispatch]") != std::string::npos);
  CHECK(xreduce("list", "XREDUCE_CONFIG=cli-calibrated.toml").code == 0);  // and it reads back
  CHECK(xreduce("calibrate --max-count 10").code == 2);                    // below the smallest size
}

TEST_CASE("cli: --rows and --offsets reduce each segment; validate checks every one") {
  const InScratchFolder scratch;
  // Offsets as a .npy of int64 (what numpy gives), with an empty segment and a tail left out.
  const std::vector<std::int64_t> offsets{0, 40, 40, 250, 900};
  {
    std::string h = "{'descr': '<i8', 'fortran_order': False, 'shape': (" + std::to_string(offsets.size()) + ",), }";
    h += std::string(64 - (10 + h.size() + 1) % 64, ' ') + "\n";
    std::ofstream out("cli-offsets.npy", std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    out.put(static_cast<char>(h.size() & 0xff));
    out.put(static_cast<char>(h.size() >> 8));
    out << h;
    out.write(reinterpret_cast<const char*>(offsets.data()), static_cast<std::streamsize>(offsets.size() * 8));
  }
  Run rows = xreduce("run --op sum --dtype i64 --n 1000 --rows 10 --json");
  REQUIRE(rows.code == 0);
  auto j = nlohmann::json::parse(rows.out);
  CHECK(j["result_shape"] == nlohmann::json::array({10}));
  CHECK(j["value"].size() == 10);
  Run arg = xreduce("run --op argmax --dtype f32 --n 1000 --offsets cli-offsets.npy --json");
  REQUIRE(arg.code == 0);
  j = nlohmann::json::parse(arg.out);
  REQUIRE(j["index"].size() == 4);
  CHECK(j["index"][1].is_null());  // the empty segment has no index
  CHECK(j["value"][1] == "-inf");
  for (const char* op : {"sum", "min", "argmin"}) {
    Run v = xreduce(std::string("validate --op ") + op + " --dtype f64 --n 1000 --offsets cli-offsets.npy --json");
    INFO(op << ": " << v.out);
    CHECK(v.code == 0);
    CHECK(nlohmann::json::parse(v.out)["reference"].size() == 4);
  }
  CHECK(xreduce("validate --op sum --dtype f32 --n 1000 --rows 8").code == 0);
  CHECK(xreduce("run --op sum --dtype f32 --n 1000 --rows 7").code == 2);             // not equal rows
  CHECK(xreduce("run --op sum --dtype f32 --n 100 --offsets cli-offsets.npy").code == 2);  // offsets past the data
  CHECK(xreduce("run --op sum --dtype f32 --n 1000 --rows 10 --width 2").code == 2);
  CHECK(xreduce("run --op sum --dtype f32 --n 1000 --rows 10 --offsets cli-offsets.npy").code == 2);
}

TEST_CASE("cli: --ops computes several ops in one pass; validate checks each") {
  Run flat = xreduce("run --ops sum,min,argmax,sumsq --dtype f64 --n 5000 --json");
  REQUIRE(flat.code == 0);
  auto j = nlohmann::json::parse(flat.out);
  CHECK(j["op"] == "sum,min,argmax,sumsq");
  REQUIRE(j["stats"].size() == 4);
  CHECK(j["stats"]["argmax"].contains("index"));
  CHECK(!j["stats"]["sum"].contains("index"));
  CHECK(j["stats"]["sumsq"]["value"].get<double>() > 0);
  Run rows = xreduce("run --ops max,sum --dtype i32 --n 1000 --rows 10 --json");
  REQUIRE(rows.code == 0);
  j = nlohmann::json::parse(rows.out);
  CHECK(j["result_shape"] == nlohmann::json::array({10}));
  CHECK(j["stats"]["max"]["value"].size() == 10);
  for (const char* shape : {"", " --rows 8"}) {
    Run v = xreduce(std::string("validate --ops sum,min,max,argmin,argmax,sumsq --dtype f32 --n 4096 --json") + shape);
    INFO(v.out);
    CHECK(v.code == 0);
    CHECK(nlohmann::json::parse(v.out)["reference"].size() == 6);
  }
  CHECK(xreduce("validate --ops sum,argmin --dtype u64 --n 1000").code == 0);
  CHECK(xreduce("run --ops sum,median --dtype f32 --n 10").code == 2);             // no such op
  CHECK(xreduce("run --ops sum --op max --dtype f32 --n 10").code == 2);           // one or the other
  CHECK(xreduce("run --dtype f32 --n 10").code == 2);                              // neither
  CHECK(nlohmann::json::parse(xreduce("run --ops sum,max --dtype f32 --n 100 --width 2 --json").out)["stats"]["max"]["value"].size() == 2);
  CHECK(xreduce("run --ops sum,max --dtype f32 --n 100 --accuracy exact").code == 2);  // exact is one op at a time
}

TEST_CASE("cli: the statistics: --op mean, var with --correction, the nan* ops; validate checks them") {
  // 0, 1, ..., 9 as i32 (the generator's data are random; an .npy of our own gives known values).
  const std::string path = (std::filesystem::temp_directory_path() / "xreduce_cli_statistics.npy").string();
  {
    std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (10,), }";
    header += std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n";
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    out.put(static_cast<char>(header.size() & 0xff)).put(static_cast<char>(header.size() >> 8));
    out << header;
    for (std::int32_t v = 0; v < 10; ++v) out.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
  auto value = [&](const std::string& args) {
    const Run r = xreduce("run --input " + path + " --json " + args);
    INFO(args << ": " << r.out);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["value"];
  };
  CHECK(value("--op mean").get<double>() == 4.5);
  CHECK(value("--op var").get<double>() == 8.25);                  // sum (x - 4.5)^2 / 10
  CHECK(value("--op var --correction 1").get<double>() == 82.5 / 9);  // / (n - 1)
  CHECK(value("--op count_nonzero").get<std::int64_t>() == 9);
  CHECK(value("--op all").get<bool>() == false);
  CHECK(value("--op norminf").get<double>() == 9.0);
  for (const char* op : {"mean", "var", "std", "norm2", "logsumexp", "nanmean", "nanargmax", "count_nonzero"}) {
    const Run v = xreduce(std::string("validate --op ") + op + " --dtype f32 --n 5000");
    INFO(op << ": " << v.out);
    CHECK(v.code == 0);
  }
  CHECK(xreduce("run --op var --correction -1 --dtype f32 --n 10").code == 2);
  {  // statistics among several ops in one read, each as alone
    const Run several = xreduce("run --input " + path + " --json --ops mean,var,max,count_nonzero,nanargmin --correction 1");
    INFO(several.out);
    REQUIRE(several.code == 0);
    const nlohmann::json stats = nlohmann::json::parse(several.out)["stats"];
    CHECK(stats["mean"]["value"].get<double>() == 4.5);
    CHECK(stats["var"]["value"].get<double>() == 82.5 / 9);
    CHECK(stats["max"]["value"].get<std::int64_t>() == 9);
    CHECK(stats["count_nonzero"]["value"].get<std::int64_t>() == 9);
    CHECK(stats["nanargmin"]["index"].get<std::uint64_t>() == 0);
  }
  CHECK(xreduce("run --ops sum,prod --dtype f32 --n 10").code == 2);  // prod is computed alone
  CHECK(xreduce("run --ops mean,max --dtype f32 --n 10 --accuracy exact").code == 2);  // an exact mean is one op at a time
  const Run help = xreduce("run --help");
  CHECK(help.out.find("nanargmax") != std::string::npos);
  CHECK(help.out.find("--correction") != std::string::npos);
  std::filesystem::remove(path);
}
