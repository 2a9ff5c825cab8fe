// Checks that C++ static constructors run before main (startup.c calls
// __libc_init_array) and that a program built with -fno-exceptions
// -fno-rtti links and runs. Exits 0 when they do.
#include <cstdio>

namespace {

int g_order = 0;

struct Counter {
  explicit Counter(int step) : seen(++g_order * step) {}
  int seen;
};

Counter g_first(10);
Counter g_second(100);

}  // namespace

int main() {
  const bool ok = g_first.seen == 10 && g_second.seen == 200 && g_order == 2;
  std::printf("%s: C++ static constructors (%d, %d)\n", ok ? "ok" : "FAILED", g_first.seen, g_second.seen);
  return ok ? 0 : 1;
}
