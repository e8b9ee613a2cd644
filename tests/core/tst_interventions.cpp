// SPDX-License-Identifier: GPL-3.0-or-later
// Interventions (interventions.h) on the fixture families (GPT-2, BERT, Llama, Gemma 2 folders and
// GGUF files). Each edit is checked against a reference that does not go through the edit code: the
// unedited forward of a copy of the folder whose weights make the same change (zero-ablating head h's
// z = zeroing W_O's inputs from that head; zeroing hook_attn_out = zeroing W_O and b_O; zeroing
// mlp_out = zeroing the MLP's down projection and bias; mean-ablating head h's z = W_O's inputs from h
// zeroed and b_O += W_O,h · mean(z_h)), in float64 to 1e-10 and float32 to 1e-5. Patching a hook with
// its own clean value changes nothing, bit for bit; mean-ablation at every position equals setting z to
// its column means; a zero edit equals a Value edit of zeros, bit for bit. Edits over the unedited
// trace (its layers and rows copied) equal the whole edited forward, bit for bit.
#include "testpaths.h"
#include "attnviz/device.h"
#include "attnviz/interventions.h"
#include "attnviz/pretrained.h"
#include "modelchecks.h"
#include "../support/modelfolders.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <functional>
#include <type_traits>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

const char *const kText = "The cat sat on the mat and the dog sat on the log";

// A change to one tensor of a safetensors file: rows [r0, r1) x columns [c0, c1) set to zero, or,
// with `add` non-empty (a 1-D tensor of float32), each entry increased by add[i].
struct TensorEdit {
    QString name;
    int r0 = 0, r1 = -1, c0 = 0, c1 = -1; // -1: to the end
    std::vector<double> add;
};

// A copy of fixture folder `folder` in `tmp` (modelfolders.h) with `edits` made to its
// model.safetensors; returns the copy's path, empty if a tensor is not there.
QString copyEdited(const QString &folder, const QTemporaryDir &tmp, const std::vector<TensorEdit> &edits)
{
    const QString dir = attnviz_test::copyModelFolder(folder, tmp);
    const QString file = dir + QStringLiteral("/model.safetensors");
    attnviz_test::Safetensors st = attnviz_test::readSafetensors(file);
    for (const TensorEdit &e : edits) {
        const QJsonObject t = st.header.value(e.name).toObject();
        if (t.isEmpty())
            return (qWarning("no tensor %s", qPrintable(e.name)), QString());
        const int size = t.value(QStringLiteral("dtype")).toString() == QLatin1String("F32") ? 4 : 2;
        const QJsonArray shape = t.value(QStringLiteral("shape")).toArray();
        const qint64 at = t.value(QStringLiteral("data_offsets")).toArray().at(0).toInteger();
        if (!e.add.empty()) {
            if (size != 4 || shape.size() != 1 || shape.at(0).toInt() != int(e.add.size()))
                return (qWarning("%s: not a float32 vector of the right size", qPrintable(e.name)), QString());
            for (size_t i = 0; i < e.add.size(); ++i) {
                float v;
                std::memcpy(&v, st.data.constData() + at + qint64(i) * 4, 4);
                v = float(double(v) + e.add[i]);
                std::memcpy(st.data.data() + at + qint64(i) * 4, &v, 4);
            }
            continue;
        }
        const int rows = shape.at(0).toInt(), cols = shape.size() > 1 ? shape.at(1).toInt() : 1;
        const int r1 = e.r1 < 0 ? rows : e.r1, c1 = e.c1 < 0 ? cols : e.c1;
        for (int r = e.r0; r < r1; ++r)
            std::memset(st.data.data() + at + (qint64(r) * cols + e.c0) * size, 0, size_t(c1 - e.c0) * size_t(size));
    }
    attnviz_test::writeSafetensors(file, st);
    return dir;
}

// The tensors of a family's layer that make the reference's change.
struct FamilyNames {
    QString wo, bo;       // attention's output projection (bo empty: no bias)
    bool woInputsAreRows; // GPT-2's Conv1D stores W_O as (in, out)
    QString down, downBias; // the MLP's last projection
};

FamilyNames namesOf(const QString &family, int layer)
{
    const QString l = QString::number(layer);
    if (family == QLatin1String("gpt2"))
        return {"transformer.h." + l + ".attn.c_proj.weight", "transformer.h." + l + ".attn.c_proj.bias", true,
                "transformer.h." + l + ".mlp.c_proj.weight", "transformer.h." + l + ".mlp.c_proj.bias"};
    if (family == QLatin1String("bert"))
        return {"encoder.layer." + l + ".attention.output.dense.weight", "encoder.layer." + l + ".attention.output.dense.bias",
                false, "encoder.layer." + l + ".output.dense.weight", "encoder.layer." + l + ".output.dense.bias"};
    return {"model.layers." + l + ".self_attn.o_proj.weight", QString(), false, "model.layers." + l + ".mlp.down_proj.weight",
            QString()};
}

// Largest |a - b| / max(1, |b|'s row maximum) over what the edited model computes downstream of any
// edit: every layer's streams, the final hidden states and the predictions' normalizers.
template <typename T>
double downstreamDifference(const Trace<T> &a, const Trace<T> &b)
{
    double worst = 0;
    auto cmp = [&](const Mat<T> &x, const Mat<T> &y) {
        if (x.rows() != y.rows() || x.cols() != y.cols() || !x.size())
            worst = INFINITY;
        else
            worst = std::max(worst, double(((x - y).cwiseAbs().rowwise().maxCoeff().array() /
                                            y.cwiseAbs().rowwise().maxCoeff().array().max(T(1)))
                                               .maxCoeff()));
    };
    if (a.layers.size() != b.layers.size())
        return INFINITY;
    for (size_t l = 0; l < a.layers.size(); ++l) {
        cmp(a.layers[l].residualIn, b.layers[l].residualIn);
        cmp(a.layers[l].afterAttention, b.layers[l].afterAttention);
        cmp(a.layers[l].output, b.layers[l].output);
    }
    cmp(a.final, b.final);
    const auto &x = a.predictions.logNormalizer, &y = b.predictions.logNormalizer;
    if (x.size() != y.size())
        return INFINITY;
    for (size_t i = 0; i < x.size(); ++i)
        if (!std::isnan(x[i]) || !std::isnan(y[i]))
            worst = std::max(worst, std::abs(x[i] - y[i]));
    for (size_t k = 0; k < a.predictions.masked.size() && k < b.predictions.masked.size(); ++k)
        for (size_t j = 0; j < a.predictions.masked[k].top.size() && j < b.predictions.masked[k].top.size(); ++j)
            worst = std::max(worst, std::abs(a.predictions.masked[k].top[j].p - b.predictions.masked[k].top[j].p));
    return worst;
}

// Whether two traces hold the same values in every stage the forward computes, bit for bit.
template <typename T>
bool identical(const Trace<T> &a, const Trace<T> &b)
{
    if (a.layers.size() != b.layers.size() || a.final != b.final || a.input != b.input)
        return false;
    for (size_t l = 0; l < a.layers.size(); ++l) {
        const LayerTrace<T> &x = a.layers[l], &y = b.layers[l];
        const SequenceResult<T> &s = x.attention.batch[0], &r = y.attention.batch[0];
        if (x.residualIn != y.residualIn || x.attentionIn != y.attentionIn || x.afterAttention != y.afterAttention ||
            x.output != y.output || s.q != r.q || s.k != r.k || s.v != r.v || s.context != r.context ||
            s.output != r.output || s.weightsAvg != r.weightsAvg || s.weights != r.weights)
            return false;
    }
    const auto &p = a.predictions, &q = b.predictions;
    if (p.next.size() != q.next.size() || p.masked.size() != q.masked.size())
        return false;
    for (size_t i = 0; i < p.next.size(); ++i)
        for (size_t j = 0; j < p.next[i].size() && j < q.next[i].size(); ++j)
            if (p.next[i][j].id != q.next[i][j].id || p.next[i][j].p != q.next[i][j].p)
                return false;
    for (size_t i = 0; i < p.masked.size(); ++i)
        for (size_t j = 0; j < p.masked[i].top.size(); ++j)
            if (p.masked[i].top[j].p != q.masked[i].top[j].p)
                return false;
    return true;
}

template <typename T>
Trace<T> traced(Model &m, const std::vector<Intervention> &edits = {}, bool keepOutputs = false)
{
    TraceRequest r;
    r.text = kText;
    r.edits = edits;
    r.keepHookOutputs = keepOutputs;
    Trace<T> t;
    const Status st = m.trace(r, t);
    if (!st)
        qWarning("%s", st.message.c_str());
    return t;
}

Intervention edit(HookPoint hook, int layer, int head, EditKind kind, std::vector<int> positions = {})
{
    Intervention e;
    e.hook = hook;
    e.layer = layer;
    e.head = head;
    e.kind = kind;
    e.positions = std::move(positions);
    return e;
}

// A device that supports everything and counts the forwards asked of it (computing nothing).
class CountingDevice final : public ForwardDevice {
public:
    std::string name() const override { return "counting"; }
    std::string device() const override { return "a test device"; }
    bool isSoftware() const override { return true; }
    Status supports(const Architecture &, const ModelWeights<float> &, const ForwardInput &) override { return {}; }
    Status forward(const Architecture &, const std::shared_ptr<const ModelWeights<float>> &, const ForwardInput &,
                   Trace<float> &) override
    {
        ++forwards;
        return Status::error(StatusCode::BackendFailed, "counting device: computes nothing");
    }
    void forgetText() override {}
    int forwards = 0;
};

const HookPoint kHooks[] = {HookPoint::ResidPre, HookPoint::ResidMid, HookPoint::ResidPost,
                            HookPoint::AttnZ,    HookPoint::AttnOut,  HookPoint::MlpOut};

} // namespace

class TestInterventions : public QObject {
    Q_OBJECT
private slots:
    // An edited forward against the unedited forward of weights edited to the same effect.
    void equalsEditedWeights_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("what"); // head | attn_out | mlp_out
        QTest::addColumn<int>("layer");
        QTest::addColumn<int>("head");
        const char *const folders[][2] = {
            {"gpt2-tiny", "gpt2"}, {"bert-tiny", "bert"}, {"llama-tiny", "llama"}, {"gemma2-tiny", "gemma2"}};
        for (const auto &f : folders) {
            const QByteArray n(f[1]);
            QTest::newRow(n + " z L0 H1") << f[0] << f[1] << "head" << 0 << 1;
            QTest::newRow(n + " z L1 H0") << f[0] << f[1] << "head" << 1 << 0;
            QTest::newRow(n + " attn_out L1") << f[0] << f[1] << "attn_out" << 1 << -1;
            QTest::newRow(n + " mlp_out L0") << f[0] << f[1] << "mlp_out" << 0 << -1;
        }
    }
    void equalsEditedWeights()
    {
        QFETCH(QString, folder);
        QFETCH(QString, family);
        QFETCH(QString, what);
        QFETCH(int, layer);
        QFETCH(int, head);
        auto model = open(folder);
        QVERIFY(model);
        const int dh = model->info().dHead;
        const FamilyNames names = namesOf(family, layer);
        std::vector<TensorEdit> weights;
        Intervention e;
        if (what == QLatin1String("head")) {
            e = edit(HookPoint::AttnZ, layer, head, EditKind::Zero);
            if (names.woInputsAreRows)
                weights.push_back({names.wo, head * dh, (head + 1) * dh, 0, -1, {}});
            else
                weights.push_back({names.wo, 0, -1, head * dh, (head + 1) * dh, {}});
        } else if (what == QLatin1String("attn_out")) {
            e = edit(HookPoint::AttnOut, layer, -1, EditKind::Zero);
            weights.push_back({names.wo, 0, -1, 0, -1, {}});
            if (!names.bo.isEmpty())
                weights.push_back({names.bo, 0, -1, 0, -1, {}});
        } else {
            e = edit(HookPoint::MlpOut, layer, -1, EditKind::Zero);
            weights.push_back({names.down, 0, -1, 0, -1, {}});
            if (!names.downBias.isEmpty())
                weights.push_back({names.downBias, 0, -1, 0, -1, {}});
        }
        QTemporaryDir tmp;
        const QString dir = copyEdited(folder, tmp, weights);
        QVERIFY(!dir.isEmpty());
        std::unique_ptr<Model> reference;
        QVERIFY(openPretrained(dir.toStdString(), {}, reference).ok());

        const Trace<double> edited = traced<double>(*model, {e}), want = traced<double>(*reference);
        QVERIFY(edited.edited());
        QVERIFY(!want.edited());
        const double d64 = downstreamDifference(edited, want);
        QVERIFY2(d64 <= 1e-10, qPrintable(QString::number(d64)));
        // the edit changes something (the test would pass for an edit that does nothing otherwise)
        QVERIFY(downstreamDifference(traced<double>(*model), want) > 1e-6);
        const Trace<float> edited32 = traced<float>(*model, {e}), want32 = traced<float>(*reference);
        const double d32 = downstreamDifference(edited32, want32);
        QVERIFY2(d32 <= 1e-5, qPrintable(QString::number(d32)));
        if (e.hook == HookPoint::AttnZ) { // the trace shows the edited z
            const Mat<double> &z = edited.layers[size_t(layer)].attention.batch[0].context;
            QCOMPARE(z.middleCols(head * dh, dh).cwiseAbs().maxCoeff(), 0.0);
        }
    }

    // Mean-ablating a head's z at every position: W_O's inputs from the head zeroed and its mean
    // contribution folded into b_O (GPT-2: float32 bias, written exactly from the float64 mean).
    void meanAblationEqualsFoldedBias_data()
    {
        QTest::addColumn<int>("layer");
        QTest::addColumn<int>("head");
        QTest::newRow("L0 H2") << 0 << 2;
        QTest::newRow("L1 H3") << 1 << 3;
    }
    void meanAblationEqualsFoldedBias()
    {
        QFETCH(int, layer);
        QFETCH(int, head);
        auto model = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(model);
        const int dh = model->info().dHead, d = model->info().dModel;
        const Trace<double> clean = traced<double>(*model);
        const Mat<double> &z = clean.layers[size_t(layer)].attention.batch[0].context;
        const Eigen::RowVectorXd mean = z.middleCols(head * dh, dh).colwise().mean();
        // W_O as the file holds it (Conv1D: (in, out)), from the float64 trace's own projections
        const Mat<double> wo = clean.layers[size_t(layer)].projections.get()->o.W; // (out, in)
        const Eigen::VectorXd contribution = wo.middleCols(head * dh, dh) * mean.transpose();
        const FamilyNames names = namesOf(QStringLiteral("gpt2"), layer);
        std::vector<double> add(static_cast<size_t>(d), 0.0);
        for (int i = 0; i < d; ++i)
            add[size_t(i)] = contribution[i];
        QTemporaryDir tmp;
        const QString dir = copyEdited(QStringLiteral("gpt2-tiny"), tmp,
                                       {{names.wo, head * dh, (head + 1) * dh, 0, -1, {}}, {names.bo, 0, -1, 0, -1, add}});
        QVERIFY(!dir.isEmpty());
        std::unique_ptr<Model> reference;
        QVERIFY(openPretrained(dir.toStdString(), {}, reference).ok());
        // the bias is float32 in the file: the reference carries its rounding (~1e-8 of the bias)
        const Trace<double> edited = traced<double>(*model, {edit(HookPoint::AttnZ, layer, head, EditKind::MeanOverText)});
        const double d64 = downstreamDifference(edited, traced<double>(*reference));
        QVERIFY2(d64 <= 1e-6, qPrintable(QString::number(d64)));
        QVERIFY(downstreamDifference(edited, clean) > 1e-4);
    }

    // Patching every hook of every layer with its own clean value changes nothing, bit for bit; the
    // trace with edits says it has them. Folders and GGUF files, both precisions.
    void ownValueChangesNothing_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<bool>("f64");
        for (const char *f : {"gpt2-tiny", "bert-tiny", "llama-tiny", "gemma2-tiny", "qwen2-tiny", "phi3-tiny"}) {
            QTest::newRow((QByteArray(f) + " f32").constData()) << fixture(QString::fromUtf8(f)) << false;
            QTest::newRow((QByteArray(f) + " f64").constData()) << fixture(QString::fromUtf8(f)) << true;
        }
        for (const char *g : {"gpt2.gguf", "llama-q8_0.gguf", "gemma2.gguf"}) {
            const QString path = QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/")) + QString::fromUtf8(g);
            QTest::newRow((QByteArray(g) + " f32").constData()) << path << false;
            QTest::newRow((QByteArray(g) + " f64").constData()) << path << true;
        }
    }
    void ownValueChangesNothing()
    {
        QFETCH(QString, path);
        QFETCH(bool, f64);
        if (f64)
            ownValue<double>(path);
        else
            ownValue<float>(path);
    }

    // Mean-ablation at every position equals z set to its column means (a Value edit), and a zero
    // edit at some positions equals a Value edit of zeros there, bit for bit.
    void meanAndZeroAsValues_data()
    {
        QTest::addColumn<QString>("path");
        for (const char *f : {"gpt2-tiny", "bert-tiny", "llama-tiny", "gemma2-tiny"})
            QTest::newRow(f) << fixture(QString::fromUtf8(f));
        QTest::newRow("llama.gguf") << QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/llama.gguf"));
    }
    void meanAndZeroAsValues()
    {
        QFETCH(QString, path);
        std::unique_ptr<Model> model;
        QVERIFY(openPretrained(path.toStdString(), {}, model).ok());
        const int dh = model->info().dHead;
        const Trace<double> clean = traced<double>(*model);
        for (int layer = 0; layer < clean.numLayers(); ++layer) {
            const Mat<double> &z = clean.layers[size_t(layer)].attention.batch[0].context;
            Intervention v = edit(HookPoint::AttnZ, layer, 1, EditKind::Value);
            v.value = z;
            v.value.middleCols(dh, dh).rowwise() = z.middleCols(dh, dh).colwise().mean();
            const Trace<double> mean = traced<double>(*model, {edit(HookPoint::AttnZ, layer, 1, EditKind::MeanOverText)});
            const double d = downstreamDifference(mean, traced<double>(*model, {v}));
            QVERIFY2(d <= 1e-10, qPrintable(QString::number(d)));
            Intervention zeros = edit(HookPoint::ResidMid, layer, -1, EditKind::Value, {1, 3});
            zeros.value = Mat<double>::Zero(z.rows(), model->info().dModel);
            QVERIFY(identical(traced<double>(*model, {edit(HookPoint::ResidMid, layer, -1, EditKind::Zero, {1, 3})}),
                              traced<double>(*model, {zeros})));
        }
    }

    // A trace with edits never continues, nor is continued by, one without them: handed back, the
    // result equals a fresh trace either way.
    void editsDoNotReusePrefix()
    {
        auto model = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(model);
        const std::vector<Intervention> edits = {edit(HookPoint::AttnZ, 0, 0, EditKind::Zero)};
        Trace<float> t = traced<float>(*model);
        TraceRequest r;
        r.text = kText;
        r.edits = edits;
        QVERIFY(model->trace(r, t).ok());
        QVERIFY(identical(t, traced<float>(*model, edits)));
        r.edits.clear();
        QVERIFY(model->trace(r, t).ok());
        QVERIFY(!t.edited());
        QVERIFY(identical(t, traced<float>(*model)));
    }

    // A device asked for does not run an edited forward: the CPU does, and the trace says why.
    void editsFallBackToTheCpu()
    {
        auto model = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(model);
        CountingDevice device;
        TraceRequest r;
        r.text = kText;
        r.device = &device;
        r.edits = {edit(HookPoint::AttnZ, 1, 2, EditKind::Zero)};
        Trace<float> t;
        QVERIFY(model->trace(r, t).ok());
        QCOMPARE(device.forwards, 0);
        QCOMPARE(t.device, std::string("cpu"));
        QVERIFY2(t.deviceNote.find("edits (interventions) are applied by the CPU forward only; computed on the CPU") !=
                     std::string::npos,
                 t.deviceNote.c_str());
        QVERIFY(identical(t, traced<float>(*model, r.edits)));
        r.edits.clear(); // without edits the device is asked
        model->trace(r, t);
        QCOMPARE(device.forwards, 1);
    }

    // Edits over the unedited trace of the same text (TraceRequest::unedited, as the window's toggle and
    // the patching sweeps compute them): the layers before the first edited one copied, and in that
    // layer, edited at attn.hook_z or after it, the attention before the edit copied too. Every stage of
    // every layer, the log-sum-exp, the final rows and the predictions equal the whole edited forward,
    // bit for bit, in float and float64, on the causal fixture families and a GGUF file.
    void overTheUneditedTrace_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<bool>("f64");
        for (const char *f : {"gpt2-tiny", "llama-tiny", "gemma2-tiny", "qwen2-tiny"}) {
            QTest::newRow((QByteArray(f) + " f32").constData()) << fixture(QString::fromUtf8(f)) << false;
            QTest::newRow((QByteArray(f) + " f64").constData()) << fixture(QString::fromUtf8(f)) << true;
        }
        const QString gguf = QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/llama-q8_0.gguf"));
        QTest::newRow("llama-q8_0.gguf f32") << gguf << false;
        QTest::newRow("llama-q8_0.gguf f64") << gguf << true;
    }
    void overTheUneditedTrace()
    {
        QFETCH(QString, path);
        QFETCH(bool, f64);
        if (f64)
            overUnedited<double>(path);
        else
            overUnedited<float>(path);
    }

    // Edits that do not fit the model or the text: one line naming the edit and the field.
    void badEdits_data()
    {
        QTest::addColumn<int>("hook");
        QTest::addColumn<int>("layer");
        QTest::addColumn<int>("head");
        QTest::addColumn<int>("position");
        QTest::addColumn<QString>("message");
        QTest::newRow("layer") << int(HookPoint::AttnZ) << 2 << 0 << -1
                               << "edit 1 (attn.hook_z): layer 2 is not one of the model's 2 layers (0..1)";
        QTest::newRow("head") << int(HookPoint::AttnZ) << 0 << 4 << -1
                              << "edit 1 (attn.hook_z): head 4 is not one of the model's 4 query heads (0..3)";
        QTest::newRow("head of resid") << int(HookPoint::ResidPre) << 0 << 1 << -1
                                       << "edit 1 (resid_pre): head 1: only attn.hook_z has heads (the others are d_model wide)";
        QTest::newRow("position") << int(HookPoint::MlpOut) << 1 << -1 << 40
                                  << "edit 1 (mlp_out): position 40 is not in the text's 13 tokens (0..12)";
    }
    void badEdits()
    {
        QFETCH(int, hook);
        QFETCH(int, layer);
        QFETCH(int, head);
        QFETCH(int, position);
        QFETCH(QString, message);
        auto model = open(QStringLiteral("gpt2-tiny"));
        QVERIFY(model);
        TraceRequest r;
        r.text = kText;
        r.edits = {edit(HookPoint(hook), layer, head, EditKind::Zero, position >= 0 ? std::vector<int>{position} : std::vector<int>{})};
        Trace<float> t;
        const Status st = model->trace(r, t);
        QCOMPARE(st.code, StatusCode::InvalidInput);
        QCOMPARE(QString::fromStdString(st.message), message);
        Intervention v = edit(HookPoint::ResidPost, 0, -1, EditKind::Value);
        v.value = Mat<double>::Zero(3, 16);
        r.edits = {v};
        QCOMPARE(QString::fromStdString(model->trace(r, t).message),
                 QStringLiteral("edit 1 (resid_post): value is 3 x 16, the hook is 13 x 16 (tokens x width)"));
    }

    void hookNames()
    {
        for (HookPoint h : kHooks) {
            HookPoint back;
            QVERIFY(hookNamed(hookName(h), back));
            QCOMPARE(back, h);
        }
        HookPoint h;
        QVERIFY(hookNamed("hook_z", h));
        QCOMPARE(h, HookPoint::AttnZ);
        QVERIFY(!hookNamed("attn.hook_q", h));
        QCOMPARE(describeEdit(edit(HookPoint::AttnZ, 1, 2, EditKind::MeanOverText)), std::string("attn.hook_z L1 H2 mean"));
        QCOMPARE(describeEdit(edit(HookPoint::ResidPre, 0, -1, EditKind::Zero, {3, 4})), std::string("resid_pre L0 pos 3,4 zero"));
    }

private:
    template <typename T>
    void overUnedited(const QString &path)
    {
        std::unique_ptr<Model> model;
        QVERIFY(openPretrained(path.toStdString(), {}, model).ok());
        const Trace<T> clean = traced<T>(*model);
        const int layers = clean.numLayers(), last = layers - 1, heads = clean.numHeads();
        QVERIFY(layers >= 2 && heads >= 2);
        const std::vector<std::vector<Intervention>> cases = {
            {edit(HookPoint::AttnZ, 1, 1, EditKind::Zero)},
            {edit(HookPoint::AttnZ, 1, 0, EditKind::MeanOverText)},
            {edit(HookPoint::AttnZ, 0, heads - 1, EditKind::Zero, {3, 5})},
            {edit(HookPoint::AttnZ, last, 1, EditKind::Zero), edit(HookPoint::AttnZ, last, 0, EditKind::Zero)},
            {edit(HookPoint::AttnOut, 1, -1, EditKind::Zero)},
            {edit(HookPoint::ResidMid, 0, -1, EditKind::MeanOverText)},
            {edit(HookPoint::MlpOut, last, -1, EditKind::Zero, {2})},
            {edit(HookPoint::ResidPost, 0, -1, EditKind::Zero, {4})},
            {edit(HookPoint::ResidPre, 1, -1, EditKind::Zero)},
            {edit(HookPoint::MlpOut, 1, -1, EditKind::Zero), edit(HookPoint::AttnZ, 0, 1, EditKind::Zero)},
        };
        for (const std::vector<Intervention> &edits : cases) {
            const QByteArray what = QByteArray::fromStdString(describeEdit(edits.front()));
            TraceRequest r;
            r.text = kText;
            r.edits = edits;
            if constexpr (std::is_same_v<T, float>)
                r.unedited = &clean;
            else
                r.uneditedDouble = &clean;
            Trace<T> over;
            QVERIFY2(model->trace(r, over).ok(), what.constData());
            const Trace<T> whole = traced<T>(*model, edits);
            QVERIFY2(over.edits == edits && whole.edits == edits, what.constData());
            QVERIFY2(identical(over, whole), what.constData());
            for (int l = 0; l < layers; ++l) {
                const SequenceResult<T> &a = over.layers[size_t(l)].attention.batch[0],
                                        &b = whole.layers[size_t(l)].attention.batch[0];
                QVERIFY2(a.lse == b.lse && a.qPre == b.qPre && a.kPre == b.kPre, what.constData());
            }
        }
    }

    template <typename T>
    void ownValue(const QString &path)
    {
        std::unique_ptr<Model> model;
        QVERIFY(openPretrained(path.toStdString(), {}, model).ok());
        const Trace<T> clean = traced<T>(*model, {}, true);
        QVERIFY(!clean.edited());
        for (int layer = 0; layer < clean.numLayers(); ++layer)
            for (HookPoint hook : kHooks) {
                Intervention e = edit(hook, layer, -1, EditKind::Value);
                const Status st = hookValue(clean, hook, layer, e.value);
                QVERIFY2(st.ok(), st.message.c_str());
                const Trace<T> patched = traced<T>(*model, {e}, true);
                QVERIFY(patched.edited());
                QVERIFY2(identical(patched, clean), hookName(hook));
                QCOMPARE(patched.layers[size_t(layer)].mlpOut, clean.layers[size_t(layer)].mlpOut);
            }
        // without keepHookOutputs the outputs are not kept: hookValue says so
        Mat<double> v;
        const Status st = hookValue(traced<T>(*model), HookPoint::MlpOut, 0, v);
        QCOMPARE(QString::fromStdString(st.message),
                 QStringLiteral("mlp_out of layer 0: not kept in this trace (TraceRequest::keepHookOutputs keeps it)"));
    }
};

QTEST_GUILESS_MAIN(TestInterventions)
#include "tst_interventions.moc"
