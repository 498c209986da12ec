"""The class: what `resource-grader batch` adds to grading one submission (grader/grading.py), on its own floor above
grading and below the commands (tests/meta/test_layering.py).

    run.py          the batch run: every submission of a folder graded, kept or regraded, grades.csv, the reports
    submissions.py  the class's submissions in their folder, each packed as the bytes a task carries
    records.py      grading.json: what a batch keeps of each grading (its Outcome, grader/outcome.py), versioned
    engine.py       where the gradings run, behind a small protocol: Dask (this machine or a cluster), a thread pool
    task.py         what a worker runs for each submission: the job (grader/job.py) in, the outcome out, as JSON
    identity.py     what a worker must agree on with the coordinator before it grades (the official hash, the
                    course secret, a sandbox), and its refusal
    cpushare.py     each grading's share of this machine's CPUs
    classreport.py  report.md: scores, behaviours by failure rate, catalogued mistakes, copies, how it ran
    webreport.py    report.html and its pages, for course staff; sidebyside.py (two modules side by side) and
                    markup.py (every value escaped unless it is the writer's markup) serve it

The copies between students (grader/similarity.py) are computed here, from the digests each grading returns.
"""
