"""Training logs whose loss or gradient norm turned nan/inf with no exception, as users pasted
them into public issue threads (cut to the rows around the event), with where each came from.

Each sample: (source URL, the pasted text, the 1-based line of the first non-finite row, the
keys found non-finite there, the step the log names there or None).
"""

from __future__ import annotations

NAN_LOGS: list[tuple[str, str, int, set[str], float | None]] = [
    (
        "https://github.com/AnswerDotAI/ModernBERT/issues/233",
        "{'loss': 0.2051, 'grad_norm': nan, 'learning_rate': 9.774074342405685e-06, 'epoch': 0.53}\n"
        "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 9.773696745450087e-06, 'epoch': 0.53}\n",
        1,
        {"grad_norm"},
        0.53,
    ),
    (
        "https://github.com/InternLM/xtuner/issues/187",
        "10/30 22:19:28 - mmengine - INFO - Epoch(train) [1][230/735]  lr: 1.9828e-04  eta: 2:45:16"
        "  time: 2.8833  data_time: 0.0040  memory: 10762  loss: 2.7682  grad_norm: 2.5099\n"
        "10/30 22:19:57 - mmengine - INFO - Epoch(train) [1][240/735]  lr: 1.9813e-04  eta: 2:44:49"
        "  time: 2.8874  data_time: 0.0042  memory: 10762  loss: 2.5128  grad_norm: nan\n",
        2,
        {"grad_norm"},
        None,
    ),
    (
        "https://github.com/open-mmlab/mmdetection/issues/11893",
        "08/03 22:09:24 - mmengine - INFO - Epoch(train)  [1][ 500/2931]  lr: 2.0000e-02  eta: "
        "0:39:15  time: 0.0578  data_time: 0.0017  memory: 2389  loss: nan  loss_rpn_cls: nan  "
        "loss_rpn_bbox: nan  loss_cls: nan  acc: 0.0000  loss_bbox: nan\n",
        1,
        {"loss", "loss_rpn_cls", "loss_rpn_bbox", "loss_cls", "loss_bbox"},
        None,
    ),
    (
        "https://github.com/open-mmlab/mmdetection/issues/5911",
        "2021-08-18 19:36:36,093 - mmdet - INFO - Epoch [1][100/5808]\tlr: 1.000e-02, eta: 4:49:14,"
        " time: 0.717, data_time: 0.020, memory: 8104, loss_rpn_cls: 0.3281, loss_rpn_bbox: 0.1095,"
        " loss_cls: 0.4124, acc: 93.2749, loss_bbox: 0.1914, loss: 1.0415\n"
        "2021-08-18 19:37:12,902 - mmdet - INFO - Epoch [1][150/5808]\tlr: 1.000e-02, eta: 4:46:48,"
        " time: 0.736, data_time: 0.020, memory: 8104, loss_rpn_cls: 0.3319, loss_rpn_bbox: 0.1191,"
        " loss_cls: 0.4035, acc: 92.77**39, loss_bbox: nan, loss: nan**\n",
        2,
        {"loss_bbox", "loss"},
        1,
    ),
    (
        "https://github.com/bigscience-workshop/Megatron-DeepSpeed/issues/396",
        " iteration     5426/  250000 | consumed samples:        43408 | consumed tokens:     "
        "88899584 | elapsed time per iteration (ms): 4247.9 | learning rate: 2.999E-04 | global "
        "batch size:     8 | loss scale: 1.0 | grad norm: nan | actual seqlen:  2048 |\n",
        1,
        {"grad norm"},
        5426,
    ),
    (
        "https://github.com/ultralytics/yolov5/issues/4963",
        " Epoch   gpu_mem       box       obj       cls    labels  img_size\n"
        "      1/99     2.64G         nan       nan       nan         4       416: 100%|██████████|"
        " 7/7 [00:15<00:00,  2.27s/it]\n",
        2,
        {"box", "obj", "cls"},
        1,
    ),
    (
        "https://github.com/vpetren/gradnorm_tf/issues/17",
        "epoch: 3449 loss: 0.2075416080653667\nepoch: 3450 loss: 0.21063452526926987\n"
        "epoch: 3451 loss: nan\nepoch: 3452 loss: nan\n",
        3,
        {"loss"},
        3451,
    ),
    (
        "https://github.com/facebookresearch/detectron2/issues/508",
        "FloatingPointError: Loss became infinite or NaN at iteration=27!\n"
        "loss_dict = {'loss_cls': tensor(nan, device='cuda:0', grad_fn=), 'loss_box_reg': "
        "tensor(0.2576, device='cuda:0', grad_fn=)}\n",
        1,
        set(),
        27,
    ),
    (
        "https://github.com/csuhan/opendet2/issues/29",
        "loss_dict = {'loss_cls_ce': nan, 'loss_box_reg': nan, 'loss_ins_con': 0.0, "
        "'loss_cls_up': nan}\n",
        1,
        {"loss_cls_ce", "loss_box_reg", "loss_cls_up"},
        None,
    ),
    (
        "https://github.com/nv-tlabs/LION/issues/9",
        "2023-01-25 00:21:09.074 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E5 "
        "iter[ 14/ 15] | [Loss] 51566519.44 | [exp] ./exp/0125/car/3dbf3ah_hvae_lion_B40 | [step]"
        "    89 | [url] none |\n"
        "2023-01-25 00:21:34.569 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E6 "
        "iter[ 14/ 15] | [Loss] nan | [exp] ./exp/0125/car/3dbf3ah_hvae_lion_B40 | [step]   104 "
        "| [url] none |\n",
        2,
        {"loss"},
        104,
    ),
    (
        "https://github.com/chosj95/MIMO-UNet/issues/40",
        "Time: 0.2490 Epoch: 001 Iter: 200/ 526 LR: 0.0002000000 Loss content: nan Loss fft: nan\n",
        1,
        {"loss content", "loss fft"},
        200,
    ),
    (
        "https://github.com/datawhalechina/tiny-universe/issues/31",
        "step 100000: train loss nan, val loss nan\n"
        "100000 | loss nan | lr 0.000000e+00 | 2006.12ms | mfu 1.68%\n",
        1,
        {"train loss", "val loss"},
        100000,
    ),
    (
        "https://github.com/cchen156/Learning-to-See-in-the-Dark/issues/117",
        "333 154 Loss=nan Time=0.040\n333 155 Loss=nan Time=0.041\n",
        1,
        {"loss"},
        None,
    ),
    (
        "https://github.com/deepspeedai/DeepSpeedExamples/issues/444",
        "epoch: 0|step: 3183|ppo_ep: 1|act_loss: 30.921875|cri_loss: 30.515625|unsuper_loss: 0.0\n"
        "average reward score: -7.80859375\n"
        "epoch: 0|step: 3184|ppo_ep: 1|act_loss: inf|cri_loss: inf|unsuper_loss: 0.0\n",
        3,
        {"act_loss", "cri_loss"},
        3184,
    ),
    (
        "https://github.com/JyChen9811/FaithDiff/issues/34",
        "[2025-08-27 10:12:22,229] [INFO] [loss_scaler.py:184:update_scale] [deepspeed] OVERFLOW! "
        "Rank 0 Skipping step. Attempted loss scale: 4, reducing to 2\n"
        "Steps:   0%|▏          | 16/6000 [00:55<4:54:46,  2.96s/it, lr=0, noise_step_loss=nan]"
        "[2025-08-27 10:12:25,030] [INFO] [loss_scaler.py:184:update_scale] [deepspeed] OVERFLOW! "
        "Rank 0 Skipping step. Attempted loss scale: 2, reducing to 1\n",
        2,
        {"noise_step_loss"},
        None,
    ),
]

# Logs that look alike but never went non-finite: no answer may be made up for them.
HEALTHY_LOGS: list[tuple[str, str]] = [
    (
        "https://github.com/Lightning-AI/pytorch-lightning/issues/4225",
        "Epoch 0:  22%|██▏       | 4/18 [00:17<01:02,  4.47s/it, loss=10.072, v_num=193315]\n"
        "Epoch 0:  28%|██▊       | 5/18 [00:20<00:53,  4.14s/it, loss=9.947, v_num=193315]\n",
    ),
    (
        "https://github.com/facebookresearch/detectron2/issues/214",
        "[11/01 20:14:43 d2.utils.events]: eta: 5:43:31  iter: 499  total_loss: 1.733  loss_cls: "
        "1.224  loss_box_reg: 0.488  time: 0.2298  data_time: 0.0032  lr: 0.004995  max_mem: 3782M\n",
    ),
    (
        "https://github.com/deepspeedai/DeepSpeed/issues/5779",
        "[2024-07-17 19:44:06,945] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
        "Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768\n",
    ),
]
