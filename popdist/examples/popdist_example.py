# The PopDist example of the PopRun guide (Listing 4.3), runnable under
# poprun here: only the poptorch and horovod imports are replaced, by
# popdist's own MPI backend (popdist.init) and a plain options dict.
#
#   PYTHONPATH=build/python build/bin/poprun --vipu-partition=MyPartition \
#       --vipu-server-host=127.0.0.1 --num-replicas=4 --num-instances=1 -v \
#       python3 popdist/examples/popdist_example.py
#
# (build/python holds the module a build places there; see docs/cli.md.)

import argparse
import popdist


def command_line_arguments():
    parser = argparse.ArgumentParser(description='PopDist PyTorch example')
    parser.add_argument(
        '--replicas', type=int, default=1, help='Number of replicas')
    return parser.parse_args()


def init_popdist(args):
    popdist.init()  # was: hvd.init()
    args.use_popdist = True
    if popdist.getNumTotalReplicas() != args.replicas:
        print(f"The number of replicas is overridden by PopRun. "
              f"The new value is {popdist.getNumTotalReplicas()}.")
    args.replicas = int(popdist.getNumLocalReplicas())

    args.popdist_rank = popdist.getInstanceIndex()
    args.popdist_size = popdist.getNumInstances()


def create_model(opts):
    # was: popdist.poptorch.Options() / poptorch.Options()
    if opts.use_popdist:
        model_opts = {"replication_factor": opts.replicas,
                      "device_id": popdist.getDeviceId(),
                      "process_id": opts.popdist_rank,
                      "num_processes": opts.popdist_size}
    else:
        model_opts = {"replication_factor": opts.replicas}

    return model_opts


if __name__ == '__main__':

    opts = command_line_arguments()

    # Initialise PopDist
    if popdist.isPopdistEnvSet():
        init_popdist(opts)
    else:
        opts.use_popdist = False

    print(f"model options: {create_model(opts)}")
