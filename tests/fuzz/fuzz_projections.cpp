// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: projections JSON (ui::loadProjectionsFile, the window's and `export
// --projection`'s reader). It reads a path, so each input is written to a file in /dev/shm first.
#include "fuzzcheck.h"

#include "live/livecompute.h"

#include <unistd.h>

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    static const std::string path = "/dev/shm/attnviz-fuzz-projections-" + std::to_string(::getpid()) + ".json";
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (!f)
        std::abort();
    if (size && std::fwrite(data, 1, size, f) != size)
        std::abort();
    std::fclose(f);
    Projections<float> p;
    const Status st = ui::loadProjectionsFile(QString::fromStdString(path), p);
    fuzz::expectOneLine(st, path);
    return 0;
}
