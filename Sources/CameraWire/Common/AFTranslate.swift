public import LiveViewCore

extension AFArea {
    /// An area from a camera rectangle in `space`, translated into pixels of a `width`×`height` JPEG.
    @inlinable
    public init(camera r: CameraRect, in space: AFCoordinateSpace, imageWidth width: Int, imageHeight height: Int,
                kind: AFKind, state: AFState) {
        self.init(pixels: space.toPixels(r, imageWidth: width, imageHeight: height), camera: r, kind: kind, state: state)
    }
}
