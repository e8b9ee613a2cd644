// SPDX-License-Identifier: GPL-3.0-or-later
#include "attnviz/tokenizer.h"

#include <QtTest>

using namespace attnviz;

class TestTokenizer : public QObject {
    Q_OBJECT
private slots:
    void words_data();
    void words();
    void spansPointIntoTheText();
    void invalidUtf8IsCountedNotDropped();
    void lowerCaseAgreesWithTokens();
};

void TestTokenizer::words_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("tokens");
    QTest::addRow("seed 003 odyssey") << "I must go back to my ship and to my crew"
                                      << QStringList{"i", "must", "go", "back", "to", "my", "ship", "and", "to", "my", "crew"};
    QTest::addRow("seed 001 journey") << "Your journey starts with one step"
                                      << QStringList{"your", "journey", "starts", "with", "one", "step"};
    QTest::addRow("punctuation split") << "Hello, world! (ok)" << QStringList{"hello", ",", "world", "!", "(", "ok", ")"};
    QTest::addRow("apostrophe inside") << "Don't touch the ship's wheel'" << QStringList{"don't", "touch", "the", "ship's", "wheel", "'"};
    QTest::addRow("typographic apostrophe") << QString::fromUtf8("It\u2019s") << QStringList{"it's"};
    QTest::addRow("leading quote") << "'tis" << QStringList{"'", "tis"};
    QTest::addRow("digits") << "In 1984 there were 3.5 ships" << QStringList{"in", "1984", "there", "were", "3", ".", "5", "ships"};
    QTest::addRow("accents lower-cased") << QString::fromUtf8("ÉLAN Über café") << QStringList{QString::fromUtf8("élan"), QString::fromUtf8("über"), QString::fromUtf8("café")};
    QTest::addRow("hyphen splits") << "well-known" << QStringList{"well", "-", "known"};
    QTest::addRow("whitespace only") << " \t\n " << QStringList{};
    QTest::addRow("empty") << "" << QStringList{};
    QTest::addRow("greek and cyrillic") << QString::fromUtf8("ΛΟΓΟΣ Слово") << QStringList{QString::fromUtf8("λογοσ"), QString::fromUtf8("слово")};
}

void TestTokenizer::words()
{
    QFETCH(QString, text);
    QFETCH(QStringList, tokens);
    const QByteArray utf8 = text.toUtf8();
    const Tokenization t = tokenize(std::string_view(utf8.constData(), size_t(utf8.size())));
    QStringList got;
    for (const auto &tok : t.tokens)
        got << QString::fromStdString(tok.text);
    QCOMPARE(got, tokens);
    QCOMPARE(t.invalidBytes, size_t(0));
}

void TestTokenizer::spansPointIntoTheText()
{
    const std::string s = "We process, and ship";
    const Tokenization t = tokenize(s);
    QCOMPARE(int(t.tokens.size()), 5);
    QCOMPARE(s.substr(t.tokens[1].begin, t.tokens[1].end - t.tokens[1].begin), std::string("process"));
    QCOMPARE(s.substr(t.tokens[2].begin, t.tokens[2].end - t.tokens[2].begin), std::string(","));
    QVERIFY(!t.tokens[2].isWord);
    QVERIFY(t.tokens[4].isWord);
    QCOMPARE(t.tokens[4].end, s.size());
}

void TestTokenizer::invalidUtf8IsCountedNotDropped()
{
    const std::string s = std::string("ship") + char(0xFF) + " crew" + char(0xC3);
    const Tokenization t = tokenize(s);
    QCOMPARE(t.invalidBytes, size_t(2));
    QCOMPARE(t.tokens.front().text, std::string("ship"));
    QCOMPARE(t.tokens[2].text, std::string("crew"));
    QCOMPARE(int(t.tokens.size()), 4); // ship, U+FFFD, crew, U+FFFD
}

void TestTokenizer::lowerCaseAgreesWithTokens()
{
    QCOMPARE(lowerCase("MIXED Case ÄÖÜ"), std::string("mixed case äöü"));
}

QTEST_GUILESS_MAIN(TestTokenizer)
#include "tst_tokenizer.moc"
