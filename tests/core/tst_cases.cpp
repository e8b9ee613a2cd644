// SPDX-License-Identifier: GPL-3.0-or-later
// Every reference case through the core, in float64 and float32, within the case's suggested
// tolerance, stage by stage: tests/fixtures/cases (= ../shared/cases) and attnviz's own PyTorch
// fixtures tests/fixtures/torch (made by make_fixtures.py: larger sizes, batches, kdim != vdim,
// every mask, sum/cosine normalization, fully-masked rows, dropout).
#include "testpaths.h"
#include "attnviz/attention.h"
#include "attnviz/caseio.h"

#include <QDir>
#include <QtTest>

using namespace attnviz;

class TestCases : public QObject {
    Q_OBJECT
private slots:
    void cases_data();
    void cases();
    void sharedCasesAreMirrored();

private:
    template <typename T>
    void run(const CaseFile &c, double rtol, double atol);
};

static QStringList caseFiles(const QString &dir)
{
    QStringList out;
    for (const QString &f : QDir(dir).entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name))
        out << QDir(dir).filePath(f);
    return out;
}

void TestCases::cases_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<bool>("f64");
    const QStringList shared = caseFiles(QString::fromUtf8(ATTNVIZ_FIXTURE("/cases")));
    const QStringList own = caseFiles(QString::fromUtf8(ATTNVIZ_FIXTURE("/torch"))).filter(QStringLiteral("/torch_"));
    QVERIFY(shared.size() >= 13);
    QVERIFY(own.size() >= 10);
    const QStringList files = shared + own;
    for (const QString &f : files) {
        QTest::addRow("%s/float64", qPrintable(QFileInfo(f).baseName())) << f << true;
        QTest::addRow("%s/float32", qPrintable(QFileInfo(f).baseName())) << f << false;
    }
}

template <typename T>
void TestCases::run(const CaseFile &c, double rtol, double atol)
{
    AttentionInput<T> in;
    in.attnMask = c.input.attnMask;
    for (const auto &s : c.input.batch)
        in.batch.push_back({s.query.cast<T>(), s.key.cast<T>(), s.value.cast<T>(), s.keyPadding});
    auto lin = [](const Linear<double> &l) { return Linear<T>{l.W.cast<T>(), l.b.cast<T>()}; };
    in.proj = {lin(c.input.proj.q), lin(c.input.proj.k), lin(c.input.proj.v), lin(c.input.proj.o)};
    AttentionResult<T> r;
    const Status st = computeAttention(c.config, in, r);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(int(c.expected.size()), 8);
    for (const auto &stage : stageNames()) {
        bool ok = false;
        std::string detail;
        const double d = compareStage(c, r, stage, rtol, atol, ok, &detail);
        QVERIFY2(ok, (stage + " max|diff| " + std::to_string(d) + ": " + detail).c_str());
    }
}

void TestCases::cases()
{
    QFETCH(QString, path);
    QFETCH(bool, f64);
    CaseFile c;
    const Status st = loadCase(path.toStdString(), c);
    QVERIFY2(st.ok(), st.message.c_str());
    if (f64)
        run<double>(c, 1e-10, 1e-12);
    else
        run<float>(c, 1e-4, 1e-5);
}

// The committed copy must equal ../shared/cases where that folder exists (CI has it beside the clone).
void TestCases::sharedCasesAreMirrored()
{
    const QString shared = QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/../shared/cases"));
    if (!QDir(shared).exists())
        QSKIP("../shared/cases is not beside this checkout");
    for (const QString &f : caseFiles(shared)) {
        QFile a(f), b(QString::fromUtf8(ATTNVIZ_FIXTURE("/cases/")) + QFileInfo(f).fileName());
        QVERIFY2(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly), qPrintable(f));
        QVERIFY2(a.readAll() == b.readAll(), qPrintable(f + QStringLiteral(" differs from the committed copy")));
    }
}

QTEST_GUILESS_MAIN(TestCases)
#include "tst_cases.moc"
