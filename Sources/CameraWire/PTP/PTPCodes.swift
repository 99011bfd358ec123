/// PTP operation codes used by the vendors (ptp.md §1.5, §2).
public enum PTPOperation {
    public static let getDeviceInfo: UInt16 = 0x1001
    public static let openSession: UInt16 = 0x1002
    public static let closeSession: UInt16 = 0x1003
    public static let getStorageIDs: UInt16 = 0x1004
    public static let getObjectHandles: UInt16 = 0x1007
    public static let getObjectInfo: UInt16 = 0x1008
    public static let getObject: UInt16 = 0x1009
    public static let deleteObject: UInt16 = 0x100B
    public static let initiateCapture: UInt16 = 0x100E
    public static let getDevicePropDesc: UInt16 = 0x1014
    public static let getDevicePropValue: UInt16 = 0x1015
    public static let setDevicePropValue: UInt16 = 0x1016
    public static let terminateOpenCapture: UInt16 = 0x1018
    public static let getPartialObject: UInt16 = 0x101B
    public static let initiateOpenCapture: UInt16 = 0x101C
    // Nikon
    public static let nikonStartLiveView: UInt16 = 0x9201
    public static let nikonEndLiveView: UInt16 = 0x9202
    public static let nikonGetLiveViewImg: UInt16 = 0x9203
    public static let nikonMfDrive: UInt16 = 0x9204
    public static let nikonChangeAfArea: UInt16 = 0x9205
    public static let nikonGetLiveViewImageEx: UInt16 = 0x9428
    public static let nikonGetLiveViewCompressedSize: UInt16 = 0x9423
    public static let nikonDeviceReady: UInt16 = 0x90C8
    public static let nikonChangeCameraMode: UInt16 = 0x90C2
    public static let nikonAfDrive: UInt16 = 0x90C1
    public static let nikonGetEvent: UInt16 = 0x90C7
    // Canon EOS
    public static let canonSetDevicePropValueEx: UInt16 = 0x9110
    public static let canonSetRemoteMode: UInt16 = 0x9114
    public static let canonSetEventMode: UInt16 = 0x9115
    public static let canonGetEvent: UInt16 = 0x9116
    public static let canonTransferComplete: UInt16 = 0x9117
    public static let canonPCHDDCapacity: UInt16 = 0x911A
    public static let canonKeepDeviceOn: UInt16 = 0x911D
    public static let canonRequestDevicePropValue: UInt16 = 0x9127
    public static let canonInitiateViewfinder: UInt16 = 0x9151
    public static let canonTerminateViewfinder: UInt16 = 0x9152
    public static let canonGetViewFinderData: UInt16 = 0x9153
    public static let canonDoAf: UInt16 = 0x9154
    public static let canonDriveLens: UInt16 = 0x9155
    public static let canonZoom: UInt16 = 0x9158
    public static let canonZoomPosition: UInt16 = 0x9159
    public static let canonTouchAfPosition: UInt16 = 0x915B
    // Sony SDIO
    public static let sonySDIOConnect: UInt16 = 0x9201
    public static let sonySDIOGetExtDeviceInfo: UInt16 = 0x9202
    public static let sonySDIOSetExtDevicePropValue: UInt16 = 0x9205
    public static let sonySDIOControlDevice: UInt16 = 0x9207
    public static let sonySDIOGetAllExtDevicePropInfo: UInt16 = 0x9209
    public static let sonySDIOOpenSession: UInt16 = 0x9210
    public static let sonySetContentsTransferMode: UInt16 = 0x9212
    // Olympus
    public static let olympusGetLiveViewImage: UInt16 = 0x9484
}

/// PTP response codes (ptp.md §1.5, §2).
public enum PTPResponse {
    public static let ok: UInt16 = 0x2001
    public static let generalError: UInt16 = 0x2002
    public static let sessionNotOpen: UInt16 = 0x2003
    public static let invalidTransactionID: UInt16 = 0x2004
    public static let operationNotSupported: UInt16 = 0x2005
    public static let invalidObjectHandle: UInt16 = 0x2009
    public static let devicePropNotSupported: UInt16 = 0x200A
    public static let accessDenied: UInt16 = 0x200F
    public static let storeNotAvailable: UInt16 = 0x2013
    public static let deviceBusy: UInt16 = 0x2019
    public static let invalidDevicePropValue: UInt16 = 0x201C
    public static let invalidParameter: UInt16 = 0x201D
    public static let sessionAlreadyOpened: UInt16 = 0x201E
    public static let nikonHardwareError: UInt16 = 0xA001
    public static let nikonOutOfFocus: UInt16 = 0xA002
    public static let nikonChangeCameraModeFailed: UInt16 = 0xA003
    public static let nikonInvalidStatus: UInt16 = 0xA004
    public static let nikonNotLiveView: UInt16 = 0xA00B
    public static let canonUnknownCommand: UInt16 = 0xA001
    public static let canonOperationRefused: UInt16 = 0xA005
    public static let canonLowBattery: UInt16 = 0xA101
    public static let canonObjectNotReady: UInt16 = 0xA102
}

/// PTP event codes and well-known object handles.
public enum PTPEvent {
    public static let objectAdded: UInt16 = 0x4002
    public static let devicePropChanged: UInt16 = 0x4006
    public static let captureComplete: UInt16 = 0x400D
    public static let nikonLiveViewStateChanged: UInt16 = 0xC10C
    /// Sony live-view dataset object handle.
    public static let sonyLiveViewHandle: UInt32 = 0xFFFF_C002
    /// Sony captured still object handle.
    public static let sonyShotHandle: UInt32 = 0xFFFF_C001
}
