"""Grade a class on a Slurm cluster: dask-jobqueue's SLURMCluster submits `dask worker` jobs, then `batch
--scheduler` grades through them, then the jobs are cancelled. Run on the login node, as the course's user:

    python -m grader.staff.slurm --queue cpu --jobs 5 --cores 8 --memory 16GB \\
        --walltime 04:00:00 --job-prologue 'export RA_GRADING_SECRET_FILE=$HOME/.course-secret' \\
        -- SUBMISSIONS/ --out grades/ --secret-file ~/.course-secret

What follows `--` is batch's command line (`resource-grader batch --help`), without --scheduler. `--python` (by
default this interpreter) is what the jobs run `dask worker` with: the same installation on every node (a venv on
the shared file system, made with a Python that the job's user can run). A job runs one worker process of one
thread a core (a grading is processes of its own, docs/graders.md); the scheduler listens at `--host` (an address
the compute nodes reach), every HTTP server (dashboards, /health) on loopback. Slurm's own commands (sbatch,
squeue, scancel) must work here: SLURM_CONF and the munge socket as the site sets them. The exit status is
batch's, or 2 when no worker joined within `--wait` seconds.
"""

import argparse
import sys

LOOPBACK = "127.0.0.1:0"  # the HTTP servers' address: loopback, any free port


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """This command's options, and batch's arguments (what follows `--`)."""
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(prog="python -m grader.staff.slurm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queue", help="the Slurm partition (default: the cluster's default)")
    parser.add_argument("--jobs", type=int, default=1, help="how many Slurm jobs (default 1)")
    parser.add_argument("--cores", type=int, default=1,
                        help="CPU cores a job asks for, and its worker processes, one a core (default 1)")
    parser.add_argument("--memory", default="2GB", help="memory a job asks for (default 2GB)")
    parser.add_argument("--walltime", default="01:00:00", help="a job's time limit (default 01:00:00)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter the jobs run (default this one; every node must reach it)")
    parser.add_argument("--host", help="the address the scheduler listens at (default: dask-jobqueue's choice)")
    parser.add_argument("--job-prologue", action="append", default=[],
                        help="a shell line each job runs before its workers (repeatable)")
    parser.add_argument("--job-directive", action="append", default=[],
                        help="an extra #SBATCH option, such as --chdir=/shared/tmp (repeatable)")
    parser.add_argument("--wait", type=float, default=600,
                        help="seconds to wait for the first worker to join (default 600: jobs may queue)")
    options = parser.parse_args(argv[:split])
    if split == len(argv):
        parser.error("batch's arguments are missing: python -m grader.staff.slurm [OPTIONS] -- FOLDER --out OUT ...")
    return options, argv[split + 1:]


def slurm_cluster(options: argparse.Namespace):
    """The SLURMCluster these options describe, its jobs not yet submitted."""
    from dask_jobqueue import SLURMCluster

    scheduler = {"dashboard_address": LOOPBACK, **({"host": options.host} if options.host else {})}
    return SLURMCluster(queue=options.queue, cores=options.cores, processes=options.cores,
                        memory=options.memory, walltime=options.walltime, python=options.python,
                        job_script_prologue=options.job_prologue, job_extra_directives=options.job_directive,
                        worker_extra_args=["--dashboard-address", LOOPBACK], scheduler_options=scheduler)


def main(argv: list[str] | None = None) -> int:
    from distributed import Client

    from grader import cli

    options, batch_arguments = parse(sys.argv[1:] if argv is None else argv)
    with slurm_cluster(options) as cluster:
        print(f"python -m grader.staff.slurm: the scheduler at {cluster.scheduler_address}; each job:\n"
              f"{cluster.job_script()}", file=sys.stderr)
        cluster.scale(jobs=options.jobs)
        with Client(cluster) as client:
            try:
                client.wait_for_workers(1, timeout=options.wait)
            except TimeoutError:
                print(f"python -m grader.staff.slurm: no worker joined within {options.wait:g} s (squeue says "
                      "why the jobs wait)", file=sys.stderr)
                return 2
        return cli.main(["batch", *batch_arguments, "--scheduler", cluster.scheduler_address])


if __name__ == "__main__":
    sys.exit(main())
