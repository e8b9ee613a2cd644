// SPDX-License-Identifier: GPL-3.0-or-later
// Every seed demonstration as a preset: applying one sets the controls, table, sentence,
// selection and view it claims, and the window then computes the numbers its notebook prints.
#include "controls/controlpanel.h"
#include "teaching/lessonpanel.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "teaching/presets.h"
#include "teaching/seedtables.h"

#include "bundledvectors.h"

#include <QComboBox>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QtTest>

#include <vector>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

// Printed to 4 decimals in the notebooks: equal within half a unit of the last place (plus float32).
// q kᵀ of one head (the window keeps q and k, not the scores, to spare memory on long inputs).
Mat<float> dots(const ComputeSnapshot &s, int head = 0)
{
    const int d = s.attention(0).dHead;
    return s.seq(0).q.middleCols(head * d, d) * s.seq(0).k.middleCols(head * d, d).transpose();
}

void expectRow(const Mat<float> &m, int row, const std::vector<double> &printed, double tol = 0.5e-4 + 2e-6)
{
    QVERIFY2(row < m.rows(), qPrintable(QStringLiteral("row %1 of %2").arg(row).arg(m.rows())));
    QCOMPARE(int(m.cols()), int(printed.size()));
    for (int j = 0; j < int(printed.size()); ++j)
        QVERIFY2(std::abs(double(m(row, j)) - printed[size_t(j)]) <= tol,
                 qPrintable(QStringLiteral("(%1, %2): %3, printed %4").arg(row).arg(j).arg(m(row, j)).arg(printed[size_t(j)])));
}

} // namespace

class TestPresets : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();
    void everySeedHasAPreset();
    void presetSetsWhatItClaims_data();
    void presetSetsWhatItClaims();
    void journeyScores();
    void journeySum();
    void journeyV1();
    void causalBothMethods();
    void dropout();
    void multiHeadWrapper();
    void multiHeadSplit();
    void bloemBasic();
    void shipInTwoContexts();
    void shipCosine();
    void multiHeadBloem();
    void crossAttention();
    void editingMarksTheLesson();
    void menuAndComboApply();

private:
    // Applies the preset and waits for the window to show its result.
    SnapshotPtr apply(const QString &id);
    MainWindow *m_w = nullptr;
};

void TestPresets::init()
{
    m_w = new MainWindow;
    m_w->session()->setDebounceMs(0);
    m_w->show();
}

void TestPresets::cleanup()
{
    delete m_w;
    m_w = nullptr;
}

SnapshotPtr TestPresets::apply(const QString &id)
{
    if (!m_w->applyPreset(id))
        return nullptr;
    const Preset *p = findPreset(id);
    // wait for the snapshot of exactly these inputs
    for (int i = 0; i < 200; ++i) {
        SnapshotPtr s = m_w->session()->snapshot();
        if (s && !m_w->session()->busy() && s->sentence == p->sentence && s->keySentence == p->keySentence
            && s->settings == p->settings && s->generation == m_w->session()->generation())
            return s;
        QTest::qWait(20);
    }
    return nullptr;
}

void TestPresets::everySeedHasAPreset()
{
    QStringList seeds;
    for (const Preset &p : presets()) {
        QVERIFY2(!p.explanation.isEmpty() && p.explanation.size() > 150, qPrintable(p.id));
        QVERIFY(!p.title.isEmpty());
        QVERIFY(!p.view.isEmpty());
        if (!seeds.contains(p.seed))
            seeds << p.seed;
        QCOMPARE(findPreset(p.id), &p);
    }
    QCOMPARE(seeds.size(), 8); // 000 .. 004, and the lessons on attnviz-tiny, attnviz-tiny 2 and attnviz-dates (tst_lessons)
    QVERIFY(seeds.contains(kTinySeed));
    QVERIFY(seeds.contains(kTiny2Seed));
    QVERIFY(seeds.contains(kDatesSeed));
    for (const char *id : {"journey-scores", "journey-sum", "causal-neg-inf", "causal-renormalize", "dropout",
                           "ship-odyssey", "ship-amazon", "multihead-split", "cross-attention"})
        QVERIFY2(findPreset(QLatin1String(id)), id);
    QVERIFY(!findPreset(QStringLiteral("no-such-preset")));
    QVERIFY(!m_w->applyPreset(QStringLiteral("no-such-preset")));
}

void TestPresets::presetSetsWhatItClaims_data()
{
    QTest::addColumn<QString>("id");
    for (const Preset &p : presets())
        if (p.model.isEmpty()) // the word vectors' presets; the model's lessons: tst_lessons
            QTest::newRow(qPrintable(p.id)) << p.id;
}

void TestPresets::presetSetsWhatItClaims()
{
    QFETCH(QString, id);
    const Preset *p = findPreset(id);
    QVERIFY(p);
    const SnapshotPtr s = apply(id);
    QVERIFY2(s, "no snapshot for the preset");
    QVERIFY2(s->hasResult(), qPrintable(s->message));
    // the controls
    QVERIFY(m_w->controls()->settings() == p->settings);
    auto *heads = m_w->controls()->findChild<QSpinBox *>(QStringLiteral("headsSpin"));
    if (heads)
        QCOMPARE(heads->value(), p->settings.numHeads);
    auto *init = m_w->controls()->findChild<QComboBox *>(QStringLiteral("initSchemeCombo"));
    QVERIFY(init);
    QCOMPARE(init->currentData().toInt(), int(p->settings.initScheme));
    // the table, the text, the selection, the view
    const QString expectedSource = p->table == PresetTable::Journey ? QString::fromStdString(journeyTable()->source())
        : p->table == PresetTable::Bloem                            ? QString::fromStdString(bloemTable()->source())
                                                                     : QString::fromLatin1(bundledEmbeddingsName());
    QCOMPARE(QString::fromStdString(m_w->session()->table()->source()), expectedSource);
    QCOMPARE(s->tableName.isEmpty() ? expectedSource : s->tableName, expectedSource);
    QCOMPARE(m_w->session()->sentence(), p->sentence);
    QCOMPARE(m_w->session()->keySentence(), p->keySentence);
    QCOMPARE(m_w->session()->headDisplay(), p->display);
    QCOMPARE(m_w->session()->selectedQuery(), p->query);
    QCOMPARE(m_w->currentViewId(), p->view);
    // no word of a preset is missing from its table
    for (uint8_t u : s->queryUnknown)
        QCOMPARE(int(u), 0);
    for (uint8_t u : s->keyUnknown)
        QCOMPARE(int(u), 0);
    // the explanation is shown
    QCOMPARE(m_w->lessonPanel()->currentId(), id);
    QVERIFY(m_w->lessonPanel()->text().contains(p->title));
}

// Seed 001: scores, softmax weights and context vector of "journey".
void TestPresets::journeyScores()
{
    const SnapshotPtr s = apply(QStringLiteral("journey-scores"));
    QVERIFY(s && s->hasResult());
    QCOMPARE(s->tq(), 6);
    QCOMPARE(s->attention(0).scale, 1.0);
    expectRow(dots(*s), 1, {0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865});
    expectRow(s->seq(0).weights[0], 1, {0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581});
    expectRow(s->seq(0).output, 1, {0.4419, 0.6515, 0.5683});
}

void TestPresets::journeySum()
{
    const SnapshotPtr s = apply(QStringLiteral("journey-sum"));
    QVERIFY(s && s->hasResult());
    expectRow(s->seq(0).weights[0], 1, {0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656});
    QVERIFY(std::abs(s->seq(0).weights[0].row(1).sum() - 1.0f) < 1e-6f);
}

// SelfAttention_v1 after torch.manual_seed(123): every printed context row.
void TestPresets::journeyV1()
{
    const SnapshotPtr s = apply(QStringLiteral("journey-v1"));
    QVERIFY(s && s->hasResult());
    const std::vector<std::vector<double>> printed = {{0.2996, 0.8053}, {0.3061, 0.8210}, {0.3058, 0.8203},
                                                      {0.2948, 0.7939}, {0.2927, 0.7891}, {0.2990, 0.8040}};
    for (int i = 0; i < 6; ++i)
        expectRow(s->seq(0).output, i, printed[size_t(i)]);
}

// SelfAttention_v2 (seed 789), causal: the same weights by -inf and by multiply-renormalize.
void TestPresets::causalBothMethods()
{
    const std::vector<std::vector<double>> printed = {
        {1, 0, 0, 0, 0, 0},
        {0.5517, 0.4483, 0, 0, 0, 0},
        {0.3800, 0.3097, 0.3103, 0, 0, 0},
        {0.2758, 0.2460, 0.2462, 0.2319, 0, 0},
        {0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0},
        {0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529}};
    for (const char *id : {"causal-neg-inf", "causal-renormalize"}) {
        const SnapshotPtr s = apply(QLatin1String(id));
        QVERIFY2(s && s->hasResult(), id);
        QCOMPARE(s->config.maskMethod,
                 QLatin1String(id) == QLatin1String("causal-neg-inf") ? MaskMethod::NegInf : MaskMethod::MultiplyRenormalize);
        for (int i = 0; i < 6; ++i)
            expectRow(s->seq(0).weights[0], i, printed[size_t(i)]);
        QCOMPARE(s->seq(0).weights[0](0, 5), 0.0f);
    }
}

// nn.Dropout(0.5) after torch.manual_seed(123) on the causal weights: the notebook's printed matrix.
void TestPresets::dropout()
{
    const SnapshotPtr s = apply(QStringLiteral("dropout"));
    QVERIFY(s && s->hasResult());
    const std::vector<std::vector<double>> printed = {{2.0, 0, 0, 0, 0, 0},          {0, 0.8966, 0, 0, 0, 0},
                                                      {0, 0, 0.6206, 0, 0, 0},       {0.5517, 0.4921, 0, 0, 0, 0},
                                                      {0.4350, 0, 0, 0, 0, 0},       {0, 0.3327, 0, 0, 0, 0}};
    for (int i = 0; i < 6; ++i)
        expectRow(s->seq(0).weights[0], i, printed[size_t(i)], 1e-4);
    QCOMPARE(int(s->seq(0).weightsPreDropout.size()), 1);
    QCOMPARE(s->seq(0).weightsPreDropout[0](1, 1), s->seq(0).weights[0](1, 1) / 2.0f);
}

void TestPresets::multiHeadWrapper()
{
    const SnapshotPtr s = apply(QStringLiteral("multihead-wrapper"));
    QVERIFY(s && s->hasResult());
    QCOMPARE(s->attention(0).numHeads, 2);
    QCOMPARE(int(s->seq(0).output.cols()), 4);
    const std::vector<std::vector<double>> printed = {
        {-0.4519, 0.2216, 0.4772, 0.1063}, {-0.5874, 0.0058, 0.5891, 0.3257}, {-0.6300, -0.0632, 0.6202, 0.3860},
        {-0.5675, -0.0843, 0.5478, 0.3589}, {-0.5526, -0.0981, 0.5321, 0.3428}, {-0.5299, -0.1081, 0.5077, 0.3493}};
    for (int i = 0; i < 6; ++i)
        expectRow(s->seq(0).output, i, printed[size_t(i)]);
}

void TestPresets::multiHeadSplit()
{
    const SnapshotPtr s = apply(QStringLiteral("multihead-split"));
    QVERIFY(s && s->hasResult());
    QCOMPARE(s->attention(0).dHead, 1);
    const std::vector<std::vector<double>> printed = {{0.3190, 0.4858}, {0.2943, 0.3897}, {0.2856, 0.3593},
                                                      {0.2693, 0.3873}, {0.2639, 0.3928}, {0.2575, 0.4028}};
    for (int i = 0; i < 6; ++i)
        expectRow(s->seq(0).output, i, printed[size_t(i)]);
}

// Seed 002: softmax(x x^T) on the printed randn draws (themselves rounded to 4 decimals, hence 1e-3).
void TestPresets::bloemBasic()
{
    const SnapshotPtr s = apply(QStringLiteral("bloem-basic"));
    QVERIFY(s && s->hasResult());
    expectRow(dots(*s), 0, {3.8774, -2.1985, 0.0499}, 1e-3);
    expectRow(dots(*s), 1, {-2.1985, 4.1004, -1.0393}, 1e-3);
    expectRow(s->seq(0).weights[0], 0, {0.97650, 0.0022437, 0.021252}, 1e-4);
    expectRow(s->seq(0).weights[0], 1, {0.0018242, 0.99236, 0.0058146}, 1e-4);
}

// Seed 003 on the bundled table: "ship" attends most to itself, then to "crew"; in the other
// sentence its weights differ (attn-golden sentence case numbers, float64 via `attnviz compute`).
void TestPresets::shipInTwoContexts()
{
    SnapshotPtr s = apply(QStringLiteral("ship-odyssey"));
    QVERIFY(s && s->hasResult());
    QCOMPARE(s->tq(), 11);
    QCOMPARE(s->attention(0).scale, 1.0 / std::sqrt(50.0));
    const Mat<float> &w = s->seq(0).weights[0];
    int best = 0;
    w.row(6).maxCoeff(&best);
    QCOMPARE(best, 6);
    Vec<float> rest = w.row(6);
    rest[6] = 0;
    rest.maxCoeff(&best);
    QCOMPARE(best, 10); // crew
    expectRow(w, 6, {0.0587, 0.0643, 0.0800, 0.0871, 0.0722, 0.0671, 0.2303, 0.0601, 0.0722, 0.0671, 0.1407}, 1e-4);
    const Vec<float> shipOdyssey = s->seq(0).output.row(6);

    s = apply(QStringLiteral("ship-amazon"));
    QVERIFY(s && s->hasResult());
    QCOMPARE(s->tq(), 6);
    expectRow(s->seq(0).weights[0], 3, {0.1167, 0.1244, 0.1098, 0.4206, 0.1140, 0.1145}, 1e-4);
    const Vec<float> shipAmazon = s->seq(0).output.row(3);
    const float cosine = shipOdyssey.dot(shipAmazon) / (shipOdyssey.norm() * shipAmazon.norm());
    QVERIFY2(cosine < 0.99f, qPrintable(QString::number(cosine))); // contextual: not the same vector
}

void TestPresets::shipCosine()
{
    const SnapshotPtr s = apply(QStringLiteral("ship-cosine"));
    QVERIFY(s && s->hasResult());
    const Mat<float> &w = s->seq(0).weights[0];
    const Mat<float> &x = s->queryInput(0);
    for (int i = 0; i < 11; ++i)
        QVERIFY(std::abs(w(i, i) - 1.0f) < 1e-5f);
    const float cos = x.row(6).dot(x.row(10)) / (x.row(6).norm() * x.row(10).norm());
    QVERIFY(std::abs(w(6, 10) - cos) < 1e-5f);
    QVERIFY((w.row(4) - w.row(8)).cwiseAbs().maxCoeff() < 1e-6f); // "to" twice: identical rows
    QVERIFY(std::abs(w.row(6).sum() - 1.0f) > 0.5f);              // not normalized
}

void TestPresets::multiHeadBloem()
{
    const SnapshotPtr s = apply(QStringLiteral("multihead-bloem"));
    QVERIFY(s && s->hasResult());
    QCOMPARE(s->attention(0).numHeads, 5);
    QCOMPARE(s->attention(0).dHead, 10);
    QCOMPARE(s->attention(0).scale, 1.0 / std::sqrt(50.0));
    QCOMPARE(int(s->seq(0).weights.size()), 5);
    // heads differ
    QVERIFY((s->seq(0).weights[0].toDense() - s->seq(0).weights[1].toDense()).cwiseAbs().maxCoeff() > 1e-3f);
}

void TestPresets::crossAttention()
{
    const SnapshotPtr s = apply(QStringLiteral("cross-attention"));
    QVERIFY(s && s->hasResult());
    QVERIFY(s->cross);
    QCOMPARE(s->tq(), 3);
    QCOMPARE(s->tk(), 5);
    QCOMPARE(int(s->seq(0).weights[0].rows()), 3);
    QCOMPARE(int(s->seq(0).weights[0].cols()), 5);
    QCOMPARE(int(s->seq(0).q.cols()), 32);
    QCOMPARE(int(s->seq(0).output.cols()), 8);
    QCOMPARE(s->attention(0).numHeads, 2);
}

void TestPresets::editingMarksTheLesson()
{
    QVERIFY(apply(QStringLiteral("journey-scores")));
    QCOMPARE(m_w->lessonPanel()->currentId(), QStringLiteral("journey-scores"));
    ComputeSettings s = m_w->controls()->settings();
    s.scaleRule = ScaleRule::InvSqrtDHead;
    m_w->controls()->setSettings(s);
    QCOMPARE(m_w->lessonPanel()->currentId(), QString());
    QVERIFY(m_w->lessonPanel()->text().contains(QStringLiteral("changed since")));
}

void TestPresets::menuAndComboApply()
{
    // the Lesson dock's combo applies a preset as a user would pick it
    auto *combo = m_w->lessonPanel()->findChild<QComboBox *>(QStringLiteral("presetCombo"));
    QVERIFY(combo);
    const int i = combo->findData(QStringLiteral("journey-sum"));
    QVERIFY(i > 0);
    combo->setCurrentIndex(i);
    emit combo->activated(i);
    QCOMPARE(m_w->controls()->settings().normalization, Normalization::Sum);
    QCOMPARE(m_w->session()->sentence(), journeySentence());
    // and the Presets menu lists every preset
    int actions = 0;
    for (QAction *top : m_w->menuBar()->actions())
        if (top->text().remove(QLatin1Char('&')) == QLatin1String("Presets"))
            for (QAction *seed : top->menu()->actions())
                if (seed->menu()) // beside the seeds' submenus: Next / Previous lesson
                    actions += int(seed->menu()->actions().size());
    QCOMPARE(actions, int(presets().size()));
}

QTEST_MAIN(TestPresets)
#include "tst_presets.moc"
