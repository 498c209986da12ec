"""The course staff's class report (issue 55): its web pages (grader/webreport.py) show what a submission wrote: the
messages its failures earned, its source beside a classmate's or the source it copied, its name and the names of its
files. This case plants markup and script where it reaches: in its source (a comment, a string), and in the message
of every graded function (an exception's text, or the answer itself), each a way out of where a page puts it: an
element, an attribute, a closed <pre>, a closed quote. Each script sets `window.raPlanted` or asks the test's
loopback listener (`__LISTENER__`) for a file. Every string from a submission is escaped as it is put into a page
(grader/markup.py), and each page's Content-Security-Policy allows no script but the report's own and no fetch at
all: the corpus checks that the report's pages hold no markup but the writer's (tests/meta/webpages.py) and show
what was planted as text; tests/meta/test_web_report.py opens them in a browser, with this case under a name of
markup, copied by a classmate (its source side by side), beside a submission whose only file is named with markup:
nothing planted runs, nothing is fetched.
"""
# </code></pre><script>window.raPlanted = "comment"; fetch("http://__LISTENER__/comment")</script>

_PLANTED = ('</code></pre></td><script>window.raPlanted = "message"; fetch("http://__LISTENER__/message")</script>'
            '<img src="http://__LISTENER__/image" onerror="window.raPlanted = \'image\'">'
            '" onmouseover="window.raPlanted = \'attribute\'" x="<svg onload="window.raPlanted = \'svg\'">')


def _raises(*args, **kwargs):
    raise ValueError(_PLANTED)


def _answers(*args, **kwargs):
    return _PLANTED


_GRADED = ("_flops", "_count", "_days", "mfu")
for _i, _name in enumerate(n for n, v in list(globals().items()) if callable(v) and n.endswith(_GRADED)):
    globals()[_name] = _raises if _i % 2 else _answers
