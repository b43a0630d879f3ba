// The smallest use of the library: sum, argmax and a named backend.
#include <cstdio>
#include <vector>

#include <xreduce/xreduce.hpp>

int main() {
  std::vector<float> v(1 << 20);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 1000) * 0.001f;

  xreduce::Result sum = xreduce::reduce(std::span<const float>(v), xreduce::Op::sum);
  std::printf("sum    = %s (backend %s)\n", sum.value.to_string().c_str(), sum.backend.c_str());

  xreduce::Result top = xreduce::reduce(std::span<const float>(v), xreduce::Op::argmax, {.backend = "sequential"});
  std::printf("argmax = %s at index %llu (backend %s)\n", top.value.to_string().c_str(),
              static_cast<unsigned long long>(*top.index), top.backend.c_str());
}
