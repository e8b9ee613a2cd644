// SPDX-License-Identifier: GPL-3.0-or-later
// applyLinear(s): dense layers, y = x W^T + b, as tasks of the core's pool. Shapes: x (t, in),
// W (out, in) row-major, y (t, out). Tasks are (row block, column block) tiles of y, of every layer
// of the call together; each is one product (x rows) * (W rows)^T, so only the tile's share of W is
// packed: float layers whose input width is a multiple of the packet by the kernels of
// attentionkernels.h (bias added as the accumulators start), others by Eigen's GEMM.
#include "attnviz/linear.h"
#include "attentionkernels.h"
#include "attnviz/parallel.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace attnviz {

template <typename T> void applyLinears(std::initializer_list<LinearApply<T>> layers)
{
    struct Tile {
        const LinearApply<T> *layer;
        Eigen::Index r0, n, c0, m;
        bool kernel; // kernels::linear, not Eigen's GEMM
    };
    std::vector<Tile> tiles;
    double work = 0;
    int products = 0;
    for (const LinearApply<T> &a : layers)
        products += a.l->isIdentity() ? 0 : 1;
    // Eigen's tiles. Rows per tile: 128 keeps a tile's x in L2; a short text is cut into column tiles
    // too, so that every thread has at least two tiles (the pool hands them out dynamically).
    constexpr Eigen::Index kRows = 128, kMinCols = 64;
    // Column tiles a multiple of 16 wide (an AVX-512 float register) so every tile but the last is
    // whole, at most kMaxCols wide: Eigen's packed copy of the tile's share of W (depth block x
    // columns) then stays under EIGEN_STACK_ALLOCATION_LIMIT (core/CMakeLists.txt), on the stack.
    constexpr Eigen::Index kMaxCols = 256;
    const int want = std::max(1, (2 * coreThreads() + std::max(1, products) - 1) / std::max(1, products));
    // The kernels' tiles: kernels::linear packs W one panel of rows at a time (in L2) and runs every
    // row of its tile against it, so tall tiles (up to kKernelRows, rows shared out evenly) pack W
    // fewer times; each layer is cut into about two tiles per thread, columns a multiple of 64 (a
    // whole number of panels with every ISA), so that tiles of equal layers divide evenly over the
    // threads (q, k, v of a short text: 3 x 4 tiles on 2 threads, not 9).
    constexpr Eigen::Index kKernelRows = 512, kKernelStep = 64;
    const int wantPerLayer = 2 * coreThreads();
    for (const LinearApply<T> &a : layers) {
        const Mat<T> &x = *a.x;
        const Linear<T> &l = *a.l;
        Mat<T> &out = *a.out;
        if (l.isIdentity()) {
            out = x;
            if (l.hasBias())
                out.rowwise() += l.b.transpose();
            continue;
        }
        const Eigen::Index t = x.rows(), nOut = l.W.rows();
        out.resize(t, nOut);
        work += 2.0 * double(t) * double(nOut) * double(l.W.cols());
        if (std::is_same_v<T, float> && kernels::supportsHeadWidth(int(l.W.cols()))) {
            const Eigen::Index rowTiles = (t + kKernelRows - 1) / kKernelRows;
            const Eigen::Index rowStep = (t + rowTiles - 1) / rowTiles;
            Eigen::Index colTiles = 1;
            if (rowTiles < wantPerLayer)
                colTiles = std::max<Eigen::Index>(
                    1, std::min<Eigen::Index>((wantPerLayer + rowTiles - 1) / rowTiles, nOut / kKernelStep));
            const Eigen::Index colStep =
                ((nOut + colTiles - 1) / colTiles + kKernelStep - 1) / kKernelStep * kKernelStep;
            for (Eigen::Index r0 = 0; r0 < t; r0 += rowStep)
                for (Eigen::Index c0 = 0; c0 < nOut; c0 += colStep)
                    tiles.push_back({&a, r0, std::min(rowStep, t - r0), c0, std::min(colStep, nOut - c0), true});
            continue;
        }
        const int rowTiles = int((t + kRows - 1) / kRows);
        int colTiles = 1;
        if (rowTiles < want)
            colTiles = int(
                std::max<Eigen::Index>(1, std::min<Eigen::Index>((want + rowTiles - 1) / rowTiles, nOut / kMinCols)));
        colTiles = std::max<int>(colTiles, int((nOut + kMaxCols - 1) / kMaxCols));
        const Eigen::Index colStep = std::min(kMaxCols, ((nOut + colTiles - 1) / colTiles + 15) / 16 * 16);
        for (Eigen::Index r0 = 0; r0 < t; r0 += kRows)
            for (Eigen::Index c0 = 0; c0 < nOut; c0 += colStep)
                tiles.push_back({&a, r0, std::min(kRows, t - r0), c0, std::min(colStep, nOut - c0), false});
    }
    parallelFor(int(tiles.size()), work, [&](int task) {
        const Tile &k = tiles[size_t(task)];
        const Linear<T> &l = *k.layer->l;
        if constexpr (std::is_same_v<T, float>) {
            if (k.kernel) {
                const Mat<T> &x = *k.layer->x;
                Mat<T> &out = *k.layer->out;
                kernels::linear(x.data() + k.r0 * x.cols(), x.cols(), int(k.n), int(x.cols()),
                                l.W.data() + k.c0 * l.W.cols(), l.W.cols(), int(k.m),
                                l.hasBias() ? l.b.data() + k.c0 : nullptr, out.data() + k.r0 * out.cols() + k.c0,
                                out.cols());
                return;
            }
        }
        auto tile = k.layer->out->block(k.r0, k.c0, k.n, k.m);
        tile.noalias() = k.layer->x->middleRows(k.r0, k.n) * l.W.middleRows(k.c0, k.m).transpose();
        if (l.hasBias())
            tile.rowwise() += l.b.segment(k.c0, k.m).transpose();
    });
}

template <typename T> void applyLinear(const Mat<T> &x, const Linear<T> &l, Mat<T> &out)
{
    applyLinears<T>({{&x, &l, &out}});
}

template void applyLinear<float>(const Mat<float> &, const Linear<float> &, Mat<float> &);
template void applyLinear<double>(const Mat<double> &, const Linear<double> &, Mat<double> &);
template void applyLinears<float>(std::initializer_list<LinearApply<float>>);
template void applyLinears<double>(std::initializer_list<LinearApply<double>>);

} // namespace attnviz
