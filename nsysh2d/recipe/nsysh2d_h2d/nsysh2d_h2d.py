"""nsys recipe `nsysh2d_h2d`: nsysh2d's per-report analysis under nsys recipe's runner.

    NSYS_RECIPE_PATH=$(nsysh2d recipe-path) nsys recipe nsysh2d_h2d --input a.sqlite b.nsys-rep [--mode ...]

The mapped function is nsysh2d.runner.cluster.task, from the installed package, over one nsysh2d.runner.jobs.Job
per input: the processes of --mode concurrent and the Dask workers of --mode dask-futures import it by name
(they do not see this folder). Reports travel as paths. Inputs are expanded as the CLI expands them
(source.files.expand_inputs: Kineto traces too, rank2 before rank10).
"""
import json

from nsys_recipe.lib import recipe
from nsys_recipe.lib.args import Option

from nsysh2d.analyses.h2d_blocking import Report
from nsysh2d.analyses.options import REPORT_GROUPS, Options
from nsysh2d.present import AnalyzeView, output
from nsysh2d.present.safe import log_lines, terminal
from nsysh2d.runner.cluster import task
from nsysh2d.runner.jobs import Job
from nsysh2d.source.files import expand_inputs
from nsysh2d.units import parse_duration


class NsysH2D(recipe.Recipe):
    def run(self, context):
        super().run(context)
        args = self._parsed_args
        paths = expand_inputs(args.input)
        opts = Options(min_ns=parse_duration(args.min_duration), direction=args.direction, top=args.top)
        jobs = [Job(p, "report", opts, REPORT_GROUPS, use_cache=not args.no_cache) for p in paths]
        results = [json.loads(r) for r in context.wait(context.map(task, jobs))]
        reports = [Report.from_json(r["report"]) for r in results if "report" in r]
        errors = [(p, r["error"], r["exit_code"]) for p, r in zip(paths, results) if "error" in r]
        view = AnalyzeView(reports, errors, "kind", args.top, inputs=len(paths))
        with open(self.add_output_file("reports.json", "JSON"), "w", encoding="utf-8") as f:
            f.write(output("json", view))
        with open(self.add_output_file("report.txt", "Text"), "w", encoding="utf-8") as f:
            f.write(log_lines(output("table", view)))
            f.writelines(f"not analyzed: {terminal(m)}\n" for _p, m, _c in errors)
        self._analysis_dict.update({"InputFiles": paths, "Outputs": self._output_files,
                                    "Reports": len(reports), "Errors": len(errors)})
        self.create_analysis_file()

    @classmethod
    def get_argument_parser(cls):
        parser = super().get_argument_parser()
        parser.add_recipe_argument("--input", nargs="+", required=True,
                                   help="nsys SQLite exports, .nsys-rep files or torch.profiler (Kineto) traces, "
                                   "or folders of them.")
        parser.add_recipe_argument(Option.OUTPUT)
        parser.add_recipe_argument(Option.FORCE_OVERWRITE)
        parser.add_recipe_argument("--min-duration", default="100us", help="A call is long from this host time on.")
        parser.add_recipe_argument("--direction", default="h2d", choices=["h2d", "d2h", "all"])
        parser.add_recipe_argument("--top", type=int, default=10, help="Longest calls listed per report.")
        parser.add_recipe_argument("--no-cache", action="store_true", help="Neither read nor write nsysh2d's cache.")
        return parser
