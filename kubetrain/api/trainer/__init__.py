"""Kubeflow Trainer v2's API (`trainer.kubeflow.org/v1alpha1`): TrainJob, TrainingRuntime and
ClusterTrainingRuntime with Trainer 2.3's field names, and the JobSet v1alpha2 template a
runtime carries. Pure."""
