// A user's program, built against the installed package only.
#include <cstdio>
#include <vector>

#include <xreduce/xreduce.hpp>

int main() {
  std::vector<std::int32_t> v(100000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i) - 50000;
  xreduce::Result r = xreduce::reduce(std::span<const std::int32_t>(v), xreduce::Op::sum);
  const std::int64_t expected = -50000;  // sum of -50000 .. 49999
  std::printf("xreduce %s: sum = %s on %s\n", XREDUCE_VERSION_STRING, r.value.to_string().c_str(), r.backend.c_str());
  return r.value.get<std::int64_t>() == expected ? 0 : 1;
}
