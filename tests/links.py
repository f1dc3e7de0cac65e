#!/usr/bin/env python3
"""links.py - check the links of the documentation; used by tests/links.bats.

    links.py md FILE.md...     every relative link of each Markdown file
                               leads to a file that exists, and its #anchor
                               (if any) to a heading of that file
    links.py xr MANDIR PAGE... every ".Xr rlock... N" of each mdoc page
                               names a page MANDIR/NAME.N

    links.py cites SOURCE...   every "docs/NAME.md#anchor" that a source
                               file cites names a heading of that page,
                               and none cites the old DESIGN sections
    links.py slug TEXT...      the GitHub anchor of each heading TEXT

Prints one line per broken link, "FILE:LINE: why", and exits 1 if there
was one, 0 if there was none, 2 on a usage error or an unreadable file.

Anchors follow GitHub's rules (github-slugger): the heading's text as
rendered (inline code, emphasis and links reduced to their text), lower
case, every character that is not a letter, a digit, '_', '-' or a space
dropped, each space made '-'; a heading met again gets -1, -2, ... in the
order of the file.  An HTML element's id="..." or name="..." is an anchor
too.  Links inside fenced code blocks and inline code are not links.
External links (a scheme such as https: or mailto:) are not checked.
"""

import os
import re
import sys
import urllib.parse

FENCE = re.compile(r'^ {0,3}(`{3,}|~{3,})')
ATX = re.compile(r'^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$')
SETEXT = re.compile(r'^ {0,3}(=+|-+)[ \t]*$')
INLINE_CODE = re.compile(r'(`+)(.+?)\1', re.S)
# [text](target "title") and ![alt](target): the target is <...> or has no
# blank and balanced parentheses one deep.
INLINE_LINK = re.compile(
    r'!?\[(?:[^\[\]\\]|\\.|\[[^\[\]]*\])*\]\(\s*'
    r'(<[^>\n]*>|(?:[^\s()\\]|\\.|\([^\s()]*\))*)'
    r'(?:\s+(?:"[^"]*"|\'[^\']*\'|\([^)]*\)))?\s*\)')
REF_DEF = re.compile(r'^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)')
HTML_ID = re.compile(r'<[a-zA-Z][^>]*\s(?:id|name)\s*=\s*["\']([^"\']+)["\']')
SCHEME = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*:')


def slug_base(text):
    """The anchor GitHub gives a heading, before duplicates are counted."""
    parts = []
    last = 0
    for m in INLINE_CODE.finditer(text):  # code spans are text as they are
        parts.append(plain_text(text[last:m.start()]))
        parts.append(m.group(2).strip())
        last = m.end()
    parts.append(plain_text(text[last:]))
    text = ''.join(parts).strip().lower()
    # github-slugger drops what is not a letter, mark, digit, connector,
    # '-' or a space; \w covers letters, digits and '_'.
    text = ''.join(c for c in text if c == '-' or c == ' ' or c.isalnum()
                   or c == '_' or unicode_mark(c))
    return text.replace(' ', '-')


def plain_text(text):
    """Markdown outside code spans as rendered: links, HTML and emphasis
    reduced to their text."""
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)  # links: text
    text = re.sub(r'<[^>]+>', '', text)  # inline HTML
    text = re.sub(r'(\*+|_+)(\S(?:.*?\S)?)\1', r'\2', text)  # emphasis
    return text.replace('\\', '')


def unicode_mark(c):
    import unicodedata
    return unicodedata.category(c).startswith('M')


def lines_outside_fences(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split('\n'), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            yield n, line
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                and line.strip() == m.group(1):
            fence = None


def anchors_of(text):
    """Every anchor a Markdown text defines."""
    seen = {}
    out = set()
    prev = None
    for _, line in lines_outside_fences(text):
        heading = None
        m = ATX.match(line)
        if m:
            heading = m.group(2) or ''
        elif prev is not None and prev.strip() and SETEXT.match(line) \
                and not ATX.match(prev) and not prev.startswith(('    ', '\t')):
            heading = prev.strip()
        if heading is not None:
            base = slug_base(heading)
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else '%s-%d' % (base, n))
        for m in HTML_ID.finditer(line):
            out.add(m.group(1))
        prev = line
    return out


_anchor_cache = {}


def anchors_of_file(path):
    if path not in _anchor_cache:
        with open(path, encoding='utf-8') as f:
            _anchor_cache[path] = anchors_of(f.read())
    return _anchor_cache[path]


def links_of(text):
    """(line number, target) of every link outside code."""
    for n, line in lines_outside_fences(text):
        bare = INLINE_CODE.sub(lambda m: ' ' * len(m.group(0)), line)
        m = REF_DEF.match(bare)
        if m:
            yield n, m.group(1)
            continue
        for m in INLINE_LINK.finditer(bare):
            yield n, m.group(1)


def exists(path):
    return os.path.exists(path)


def check_md(path):
    bad = []
    with open(path, encoding='utf-8') as f:
        text = f.read()
    here = os.path.dirname(path)
    for n, target in links_of(text):
        if target.startswith('<') and target.endswith('>'):
            target = target[1:-1]
        if not target:
            bad.append('%s:%d: an empty link' % (path, n))
            continue
        if SCHEME.match(target) or target.startswith('//'):
            continue
        file_part, _, anchor = target.partition('#')
        file_part = urllib.parse.unquote(file_part)
        anchor = urllib.parse.unquote(anchor)
        dest = os.path.normpath(os.path.join(here, file_part)) if file_part else path
        if file_part and not exists(dest):
            bad.append('%s:%d: %s: no such file' % (path, n, target))
            continue
        if not anchor or not os.path.exists(dest):
            if '#' in target and not anchor:
                bad.append('%s:%d: %s: an empty anchor' % (path, n, target))
            continue
        if not dest.endswith('.md') or os.path.isdir(dest):
            bad.append('%s:%d: %s: an anchor in a file that is not Markdown'
                       % (path, n, target))
            continue
        if anchor not in anchors_of_file(dest):
            bad.append('%s:%d: %s: no heading with that anchor in %s'
                       % (path, n, target, os.path.relpath(dest)))
    return bad


XR = re.compile(r'^\.Xr\s+(\S+)\s+(\S+)')


def check_xr(mandir, path):
    bad = []
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            m = XR.match(line)
            if not m or not m.group(1).startswith('rlock'):
                continue
            name, section = m.group(1), m.group(2)
            page = os.path.join(mandir, '%s.%s' % (name, section))
            if not os.path.isfile(page):
                bad.append('%s:%d: .Xr %s %s: no page %s/%s.%s'
                           % (path, n, name, section, mandir, name, section))
    return bad


CITE = re.compile(r'(?<![\w/.-])(docs/[\w.-]+\.md)#([\w-]+)')
# A path of the repository named in a source file ("lib/scripts/baton.lua",
# "tests/nest.bats"): it must exist.  A placeholder (NAME, N, a glob) is
# no path.
PATH_CITE = re.compile(r'(?<![\w/.$-])((?:lib|cli|tests|man|docs|bench|completions|debian)'
                       r'/[\w./-]*?\w\.(?:c|h|lua|md|bats|bash|sh|py|[1-8]))(?![\w/#-])')
OLD_CITE = re.compile(r'\bDESIGN(?:\.md)?(?: section| "|,? section)')


def check_cites(path):
    """The citations of a source file, from the repository's top."""
    bad = []
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            for m in CITE.finditer(line):
                page, anchor = m.group(1), m.group(2)
                if not exists(page):
                    bad.append('%s:%d: %s#%s: no such file' % (path, n, page, anchor))
                elif os.path.exists(page) and anchor not in anchors_of_file(page):
                    bad.append('%s:%d: %s#%s: no heading with that anchor in %s'
                               % (path, n, page, anchor, page))
            # In a Makefile or a script, only its comments: a recipe names
            # what a build writes, or wrote once.
            text = line
            if not path.endswith(('.c', '.h', '.lua', '.md')):
                text = line[line.index('#'):] if '#' in line else ''
            for m in PATH_CITE.finditer(text):
                cited = m.group(1)
                if re.search(r'[A-Z]{2,}|_[A-Z]\.|\*', cited) and not os.path.exists(cited):
                    continue
                if not os.path.exists(cited) and not os.path.exists(
                        os.path.join('build', cited)):
                    bad.append('%s:%d: %s: no such file' % (path, n, cited))
            if OLD_CITE.search(line):
                bad.append('%s:%d: cites DESIGN, which is docs/design.md now'
                           % (path, n))
    return bad


def main(argv):
    if len(argv) < 2 or argv[1] not in ('md', 'xr', 'cites', 'slug'):
        print(__doc__.strip().split('\n\n')[1], file=sys.stderr)
        return 2
    bad = []
    try:
        if argv[1] == 'slug':
            for text in argv[2:]:
                print(slug_base(text))
            return 0
        if argv[1] == 'md':
            for path in argv[2:]:
                bad += check_md(path)
        elif argv[1] == 'cites':
            for path in argv[2:]:
                bad += check_cites(path)
        else:
            if len(argv) < 3 or not os.path.isdir(argv[2]):
                print('links.py: xr needs a directory of man pages', file=sys.stderr)
                return 2
            for path in argv[3:]:
                bad += check_xr(argv[2], path)
    except (OSError, UnicodeDecodeError) as e:
        print('links.py: %s' % e, file=sys.stderr)
        return 2
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
