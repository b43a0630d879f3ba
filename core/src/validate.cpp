#include "xreduce/validate.hpp"

#include <chrono>

#include "xreduce/context.hpp"
#include "xreduce/error.hpp"
#include "xreduce/backend/features.hpp"
#include "xreduce/backend/registry.hpp"

namespace xreduce {

bool ValidationReport::ok() const {
  for (const ValidationRow& row : rows)
    if (row.exact && !row.agrees && !(row.failure_code == ErrorCode::unavailable)) return false;
  return true;
}

ValidationReport validate(Context& context, const Request& request, const Options& options,
                          const std::vector<std::string>& backends) {
  Request q = request;
  q.memory = context.locate(q).memory;
  if (q.memory != Memory::host) throw Error(ErrorCode::unsupported, "validate needs host data for its reference");

  ValidationReport report;
  report.reference = exact_reference(q);
  Options given = options;
  if (!given.accuracy) given.accuracy = context.config().accuracy;
  const Accuracy accuracy = *given.accuracy;
  const Features features = features_of(canonical(q), accuracy);
  std::vector<Reducer*> chosen;
  if (backends.empty()) {
    for (const auto& e : context.registry().entries())
      if (e.reducer->capabilities().support(features) != Support::none) chosen.push_back(e.reducer);
  } else {
    for (const auto& name : backends) chosen.push_back(&context.registry().get(name));
  }
  for (Reducer* r : chosen) {
    ValidationRow row;
    row.backend = std::string(r->name());
    row.exact = r->capabilities().support(features) == Support::exact;
    try {
      auto start = std::chrono::steady_clock::now();
      Options mine = given;  // each backend gets the call's settings it reads
      if (!mine.settings.empty()) mine.settings = options.settings.only(r->settings());
      Result result = r->reduce(q, mine);
      row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      row.ran = true;
      row.agrees = agrees(q, report.reference, result, &row.error, accuracy);
      row.result = std::move(result);
    } catch (const Error& e) {
      row.failure = e.what();
      row.failure_code = e.code();
    }
    report.rows.push_back(std::move(row));
  }
  return report;
}

}  // namespace xreduce
