// memplan CLI entry point; the CLI helper replaces this with the verb dispatch.
#include <cstdio>

int main() {
  std::puts("memplan");
  return 0;
}
