// Resident memory of this process, for the tests that check a loop doesn't grow it.
#pragma once
#include <unistd.h>

#include <cstdio>

inline size_t rss_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return size_t(resident) * size_t(sysconf(_SC_PAGESIZE));
}
