"""Reads back what gradsweep sent to an MLflow server through MLflow's own client (its REST API), as JSON
on stdout, for tests/host/mlflow_test.cpp: the runs of one experiment, each with its status, params, tags,
every metric's history and its artifacts.

    mlflow_read.py URI EXPERIMENT
"""
import json
import sys

from mlflow.tracking import MlflowClient


def artifact_files(client, run_id, folder=None):
    """Every artifact file's path, folders listed through."""
    for artifact in client.list_artifacts(run_id, folder):
        if artifact.is_dir:
            yield from artifact_files(client, run_id, artifact.path)
        else:
            yield artifact.path


def main():
    uri, name = sys.argv[1], sys.argv[2]
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(name)
    runs = []
    if experiment is not None:
        for run in client.search_runs([experiment.experiment_id]):
            history = {
                key: [{"step": m.step, "value": m.value} for m in client.get_metric_history(run.info.run_id, key)]
                for key in run.data.metrics
            }
            runs.append({
                "name": run.info.run_name,
                "status": run.info.status,
                "params": run.data.params,
                "tags": {k: v for k, v in run.data.tags.items() if not k.startswith("mlflow.")},
                "metrics": history,
                "artifacts": sorted(artifact_files(client, run.info.run_id)),
            })
    print(json.dumps({"experiment": experiment is not None, "runs": runs}))


if __name__ == "__main__":
    main()
